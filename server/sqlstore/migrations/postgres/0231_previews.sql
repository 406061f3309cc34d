-- Issue 23: preview URLs. A preview's token is kept as its SHA-256 only;
-- revoked_at (0 while live) ends it before expires_at.

CREATE TABLE previews (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
    port       INTEGER NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT NOT NULL
);

CREATE INDEX previews_sandbox ON previews (sandbox_id);
