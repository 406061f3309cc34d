-- Issue 22: snapshots of sandboxes' filesystems. The data is in the
-- driver's content-addressed store under key (shared by snapshots of the
-- same state); a deleted snapshot keeps its row with deleted_at set.

CREATE TABLE snapshots (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    sandbox_id  TEXT NOT NULL,
    label       TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    snap_key    TEXT NOT NULL DEFAULT '',
    size_bytes  BIGINT NOT NULL DEFAULT 0,
    method      TEXT NOT NULL DEFAULT '',
    driver      TEXT NOT NULL DEFAULT '',
    size        TEXT NOT NULL DEFAULT '',
    storage_gb  DOUBLE PRECISION NOT NULL DEFAULT 0,
    image_id    TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    deleted_at  BIGINT
);

CREATE INDEX snapshots_account ON snapshots (account_id, created_at);
CREATE INDEX snapshots_key ON snapshots (snap_key);
