-- Issue 26: workspace sync to object storage. storage_sync is one row per
-- synced sandbox (kept after it is destroyed: its files outlive it);
-- storage_files indexes the files stored, by the size and modification
-- time (nanoseconds) of the version stored; storage_queue holds the writes
-- the API acknowledged and the sync has not flushed yet, so a server
-- killed meanwhile loses none. Times are microseconds, 0 for none.

CREATE TABLE storage_sync (
    sandbox_id      TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL,
    state           TEXT NOT NULL,
    last_flush_at   BIGINT NOT NULL,
    last_error      TEXT NOT NULL,
    last_error_at   BIGINT NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    retain_until    BIGINT NOT NULL,
    final_done      INTEGER NOT NULL,
    created_at      BIGINT NOT NULL
);

CREATE INDEX storage_sync_state ON storage_sync (state);

CREATE TABLE storage_files (
    sandbox_id TEXT NOT NULL,
    path       TEXT NOT NULL,
    size       BIGINT NOT NULL,
    mtime_ns   BIGINT NOT NULL,
    synced_at  BIGINT NOT NULL,
    PRIMARY KEY (sandbox_id, path)
);

CREATE TABLE storage_queue (
    sandbox_id TEXT NOT NULL,
    path       TEXT NOT NULL,
    queued_at  BIGINT NOT NULL,
    PRIMARY KEY (sandbox_id, path)
);
