-- Issue 7: persistent volumes, and which sandboxes mount them, so a
-- volume mounted by a live sandbox is not deleted.

CREATE TABLE volumes (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    label      TEXT NOT NULL,
    size_gb    DOUBLE PRECISION NOT NULL,
    status     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX volumes_account ON volumes (account_id, created_at);

CREATE TABLE sandbox_volumes (
    sandbox_id TEXT NOT NULL,
    volume_id  TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, volume_id)
);
CREATE INDEX sandbox_volumes_volume ON sandbox_volumes (volume_id);
