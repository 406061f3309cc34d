-- Issue 5: each account's command allowlist (reference §3.6), the rules as
-- their JSON array. No row means no allowlist: every command is allowed.

CREATE TABLE allowed_commands (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    rules      TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
