-- Issue 9: asciicast recordings of takeovers. No foreign key to sandboxes:
-- a recording outlives its sandbox's row being cleaned up.

CREATE TABLE takeover_recordings (
    id         TEXT PRIMARY KEY,
    sandbox_id TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    data       TEXT NOT NULL,
    truncated  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
);

CREATE INDEX takeover_recordings_sandbox ON takeover_recordings (sandbox_id);
