-- Issue 23: the secrets broker. A secret's value is stored only as
-- ciphertext under a data key of its own, itself stored only wrapped by
-- the server's secrets key key_id (both base64). Sandboxes name the
-- secrets they were granted; a name is resolved at each use.

CREATE TABLE secrets (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    allowed_hosts TEXT NOT NULL,
    trust_tier    TEXT NOT NULL,
    key_id        TEXT NOT NULL,
    wrapped_key   TEXT NOT NULL,
    ciphertext    TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    last_used_at  BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE sandbox_secrets (
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, name)
);
