-- Issue 7: image records, which sandboxes boot from which image, and each
-- sandbox's egress grants, so a restarted server keeps every image's
-- status, still refuses deleting an image in use, and serves an adopted
-- sandbox's egress again.

CREATE TABLE images (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    label          TEXT NOT NULL,
    source         TEXT NOT NULL,
    status         TEXT NOT NULL,
    spec           TEXT NOT NULL, -- api.ImageSpec as JSON; '' for imports
    failure_reason TEXT NOT NULL,
    size_bytes     BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    completed_at   BIGINT
);
CREATE INDEX images_account ON images (account_id, created_at);

CREATE TABLE sandbox_images (
    sandbox_id TEXT PRIMARY KEY,
    image_id   TEXT NOT NULL
);
CREATE INDEX sandbox_images_image ON sandbox_images (image_id);

CREATE TABLE sandbox_egress (
    sandbox_id TEXT PRIMARY KEY,
    grants     TEXT NOT NULL -- "host:port" grants, one per line
);
