-- Issue 21: what the E2B facade keeps about a sandbox beyond boxkite's own
-- record: E2B's template name, metadata and environment (JSON objects).

CREATE TABLE e2b_sandboxes (
    sandbox_id  TEXT PRIMARY KEY REFERENCES sandboxes (id) ON DELETE CASCADE,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    template_id TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    env_vars    TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE INDEX e2b_sandboxes_account ON e2b_sandboxes (account_id);
