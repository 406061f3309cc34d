package sqlstore

import (
	"context"
	"fmt"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.MCPConnectionStore = (*Store)(nil)

const mcpColumns = `id, account_id, label, catalog_id, host, created_at`

func scanMCP(r rowScanner) (*model.MCPConnection, error) {
	var c model.MCPConnection
	var created int64
	if err := r.Scan(&c.ID, &c.AccountID, &c.Label, &c.CatalogID, &c.Host, &created); err != nil {
		return nil, err
	}
	c.CreatedAt = fromMicros(created)
	return &c, nil
}

// CreateMCPConnection implements model.MCPConnectionStore.
func (s *Store) CreateMCPConnection(ctx context.Context, c *model.MCPConnection) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO mcp_connections (`+mcpColumns+`) VALUES (?, ?, ?, ?, ?, ?)`),
		c.ID, c.AccountID, c.Label, c.CatalogID, c.Host, micros(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert mcp connection: %w", s.mapErr(err))
	}
	return nil
}

// MCPConnections implements model.MCPConnectionStore.
func (s *Store) MCPConnections(ctx context.Context, accountID string) ([]*model.MCPConnection, error) {
	return queryAll(ctx, s, "mcp connections", scanMCP, `SELECT `+mcpColumns+` FROM mcp_connections WHERE account_id = ? ORDER BY created_at DESC, id`, accountID)
}

// DeleteMCPConnection implements model.MCPConnectionStore.
func (s *Store) DeleteMCPConnection(ctx context.Context, accountID, id string) error {
	res, err := s.exec(ctx, s.q(`DELETE FROM mcp_connections WHERE id = ? AND account_id = ?`), id, accountID)
	if err != nil {
		return fmt.Errorf("delete mcp connection: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("delete mcp connection: %w", model.ErrNotFound)
	}
	return nil
}
