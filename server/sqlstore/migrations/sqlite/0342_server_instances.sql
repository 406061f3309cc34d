-- Server instances and snapshot owners (session 24): each server sharing
-- the database keeps a heartbeat row here, alive until alive_until (Unix
-- microseconds, by the server's own clock, as the lifecycle lease's),
-- renewed every 10 s for 30 s and removed at a clean shutdown; a pending
-- snapshot records the instance taking it (snapshots.owner). A server
-- fails only the pending snapshots whose owner's heartbeat ended (a
-- crash, its own previous life) or that have none (taken before this
-- migration), never those a live server is taking (server/snapshot,
-- Reconcile and Sweep).
CREATE TABLE server_instances (
    id          TEXT PRIMARY KEY,
    alive_until BIGINT NOT NULL
);
ALTER TABLE snapshots ADD COLUMN owner TEXT NOT NULL DEFAULT '';
