package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/boxkite/boxkite/client/api"
)

// AdminMetrics calls GET /v1/admin/metrics (operator accounts only).
func (c *Client) AdminMetrics(ctx context.Context) (*api.AdminMetrics, error) {
	var m api.AdminMetrics
	if err := c.do(ctx, http.MethodGet, "/v1/admin/metrics", nil, &m, nil); err != nil {
		return nil, err
	}
	return &m, nil
}

// AdminAuditLog calls GET /v1/admin/audit-log: the audit log across
// accounts (or of accountID, if not ""), newest first.
func (c *Client) AdminAuditLog(ctx context.Context, accountID string, limit, offset int) ([]api.LogEntry, error) {
	q := url.Values{"limit": {fmt.Sprint(limit)}, "offset": {fmt.Sprint(offset)}}
	if accountID != "" {
		q.Set("account_id", accountID)
	}
	var es []api.LogEntry
	if err := c.do(ctx, http.MethodGet, "/v1/admin/audit-log?"+q.Encode(), nil, &es, nil); err != nil {
		return nil, err
	}
	return es, nil
}

// AdminAccessLog calls GET /v1/admin/access-log, newest first.
func (c *Client) AdminAccessLog(ctx context.Context, limit, offset int) ([]api.AdminAccess, error) {
	var as []api.AdminAccess
	if err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/admin/access-log?limit=%d&offset=%d", limit, offset), nil, &as, nil); err != nil {
		return nil, err
	}
	return as, nil
}
