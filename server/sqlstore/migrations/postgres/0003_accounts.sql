-- Issue 5: passwords, settings, SSH keys and idempotency records.
-- Portable SQL: the Postgres migrations repeat it unchanged.

-- '' means no password: the local bootstrap account logs in with its key only.
ALTER TABLE accounts ADD COLUMN password_hash TEXT NOT NULL DEFAULT '';

-- Server-wide values generated once, such as the token signing key, so
-- that every server sharing the database agrees on them.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Public keys for the SSH bastion. A key identifies one account, so the
-- fingerprint is unique across all of them.
CREATE TABLE ssh_keys (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    fingerprint TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL
);

CREATE INDEX ssh_keys_account ON ssh_keys (account_id, created_at);

-- Idempotency-Key records: one per (credential, method, path, key), in
-- progress until the request completes, then holding the answer to
-- replay (body as base64 text, portable across dialects) until expires_at.
CREATE TABLE idempotency_keys (
    credential   TEXT NOT NULL,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    idem_key     TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
    status       INTEGER NOT NULL DEFAULT 0,
    content_type TEXT NOT NULL DEFAULT '',
    body         TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (credential, method, path, idem_key)
);

CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- Counting a month's sandbox-hours per account, and the sandboxes being
-- created or active, inside the quota critical section.
CREATE INDEX sandboxes_account_status ON sandboxes (account_id, status);
