package admin

import (
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the operator's routes: an API key of an operator account;
// any other caller gets 403 (401 without a valid key), and every call is
// in the access log (unauthenticated ones up to refusedPerMinute).
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/admin/metrics", Summary: "Operator: every account's concurrent sandboxes and hours this month (at most 500 accounts, busiest first)", Response: api.AdminMetrics{}}, Cred: httpx.CredAPIKey, Handler: s.operator(s.metrics), Refused: s.refused},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/admin/audit-log", Summary: "Operator: the audit log across accounts, newest first (account_id, limit ≤ 500, offset)", Response: []api.LogEntry{}, Query: []string{"account_id", "limit", "offset"}}, Cred: httpx.CredAPIKey, Handler: s.operator(s.auditLog), Refused: s.refused},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/admin/access-log", Summary: "Operator: the admin access log (every call to /v1/admin/*), newest first (limit ≤ 500, offset)", Response: []api.AdminAccess{}, Query: []string{"limit", "offset"}}, Cred: httpx.CredAPIKey, Handler: s.operator(s.accessLog), Refused: s.refused},
	}
}
