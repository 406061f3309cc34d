-- Issue 7: MCP connections, each a named egress grant to a catalog host.

CREATE TABLE mcp_connections (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    label      TEXT NOT NULL,
    catalog_id TEXT NOT NULL,
    host       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, label)
);
