-- Drops of snapshot data under way (session 22): a server deleting the
-- data under snap_key records it here, leased until lease_until (Unix
-- microseconds), in the same critical section as its check that no
-- snapshot holds the key; a snapshot that would keep or write data under
-- the key claims it (snapshots.snap_key on its pending row) only while
-- no live drop row names it. So servers sharing the database and the
-- snapshot directory never record a snapshot on data deleted under it.
CREATE TABLE snapshot_drops (
    snap_key    TEXT PRIMARY KEY,
    lease_until BIGINT NOT NULL
);
