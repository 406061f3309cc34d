-- The lifecycle lease (session 23): servers sharing the database order
-- the pauses, resumes, removals and snapshot copies of one sandbox by
-- taking this lease on its row before the driver work (server/sandbox,
-- lease.go). lifecycle_owner is the holder's instance id, '' for none;
-- lifecycle_until (Unix microseconds) ends it, so a server that died
-- holding it holds it no longer once that passes. The holder renews it
-- during long work and clears it when done.
ALTER TABLE sandboxes ADD COLUMN lifecycle_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE sandboxes ADD COLUMN lifecycle_until BIGINT NOT NULL DEFAULT 0;
