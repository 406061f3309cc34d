-- Issue 24: the admin access log, one row per call to /v1/admin/*
-- (server/admin), allowed or refused; at is microseconds. Kept when the
-- account goes, as an access log should be.

CREATE TABLE admin_access_log (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    email      TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    method     TEXT NOT NULL,
    path       TEXT NOT NULL,
    query      TEXT NOT NULL,
    status     INTEGER NOT NULL,
    at         BIGINT NOT NULL
);

CREATE INDEX admin_access_log_at ON admin_access_log (at);
CREATE INDEX exec_log_started ON exec_log (started_at);
