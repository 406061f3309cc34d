-- The grants of the sandbox a snapshot was taken of (secrets by id,
-- egress hosts; model.Grants as JSON), which its restores inherit.
-- Snapshots taken before keep '' and restore with none.
ALTER TABLE snapshots ADD COLUMN grants TEXT NOT NULL DEFAULT '';
