-- Issue 3: the audit log. Per sandbox, a hash chain in seq order (see
-- api.LogEntry.Hash): row_hash covers the row and prev_hash, the row_hash
-- of the row before it. Rows are only ever inserted.
--
-- No foreign key to sandboxes: the log is evidence and must outlive any
-- clean-up of sandbox rows. UNIQUE (sandbox_id, seq) makes two writers that
-- raced for the same place in a chain fail instead of forking it.

CREATE TABLE exec_log (
    id               TEXT PRIMARY KEY,
    sandbox_id       TEXT NOT NULL,
    seq              BIGINT NOT NULL,
    account_id       TEXT NOT NULL,
    source           TEXT NOT NULL,
    operation        TEXT NOT NULL,
    detail           TEXT NOT NULL,
    exit_code        INTEGER,
    output_truncated BOOLEAN NOT NULL DEFAULT FALSE,
    started_at       BIGINT NOT NULL,
    duration_ms      BIGINT NOT NULL,
    prev_hash        TEXT NOT NULL,
    row_hash         TEXT NOT NULL,
    UNIQUE (sandbox_id, seq)
);

CREATE INDEX exec_log_account_started ON exec_log (account_id, started_at);
