-- Issue 2: accounts, API keys and sandboxes.
-- Times are BIGINT microseconds since the Unix epoch (UTC), so that ordering
-- and comparisons are plain integer operations in SQLite and Postgres alike.

CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    email      TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT NOT NULL DEFAULT '',
    key_hash     TEXT NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    last_used_at BIGINT
);

CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE sandboxes (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    label            TEXT NOT NULL DEFAULT '',
    size             TEXT NOT NULL,
    storage_gb       DOUBLE PRECISION NOT NULL DEFAULT 0,
    lifetime_minutes INTEGER NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('creating', 'active', 'destroyed', 'lost')),
    destroy_reason   TEXT NOT NULL DEFAULT '',
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    destroyed_at     BIGINT,
    driver           TEXT NOT NULL,
    -- How the control plane reaches the sidecar. Never shown by the API.
    endpoint_network TEXT NOT NULL DEFAULT '',
    endpoint_address TEXT NOT NULL DEFAULT '',
    endpoint_token   TEXT NOT NULL DEFAULT '',
    endpoint_cert    TEXT NOT NULL DEFAULT ''
);

CREATE INDEX sandboxes_account_created ON sandboxes (account_id, created_at);
CREATE INDEX sandboxes_status_expires ON sandboxes (status, expires_at);
