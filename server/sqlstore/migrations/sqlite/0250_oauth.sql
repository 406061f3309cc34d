-- Issue 24: the OAuth 2.1 authorization server of /mcp/ (server/oauth).
-- Codes, refresh tokens and registration tokens are kept as SHA-256 hex
-- of their values. A grant is the family of tokens from one
-- authorization code; revoked_at (microseconds, 0: in force) ends them
-- all. A refresh token is spent by its first use (used_at); deleting a
-- client deletes its codes, grants and refresh tokens.

CREATE TABLE oauth_clients (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    redirect_uris     TEXT NOT NULL,
    registration_hash TEXT NOT NULL,
    created_at        BIGINT NOT NULL
);

CREATE TABLE oauth_authorization_codes (
    hash           TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource       TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL
);

CREATE TABLE oauth_grants (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    resource   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT NOT NULL
);

CREATE TABLE oauth_refresh_tokens (
    hash       TEXT PRIMARY KEY,
    grant_id   TEXT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT NOT NULL
);

CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);
