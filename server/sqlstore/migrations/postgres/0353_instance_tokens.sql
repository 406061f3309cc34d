-- Fencing tokens (session 25): each server's heartbeat lease carries a
-- token that stays while the lease is renewed before it ends and grows
-- when the lease is taken again after it ended (another server may have
-- taken the instance for dead meanwhile and failed its pending
-- snapshots); a pending snapshot records the token it was reserved under
-- (snapshots.owner_token), and its owner completes it only while its
-- lease still runs under that token (SnapshotStore.FinishSnapshot). 0:
-- no token (a sole server's rows, rows and heartbeats of older servers).
ALTER TABLE server_instances ADD COLUMN token BIGINT NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN owner_token BIGINT NOT NULL DEFAULT 0;
