-- A removal under way: the reason (deleted, expired) recorded before the
-- driver tears the sandbox down, so a start after a crash in between
-- finishes it as destroyed rather than lost. '' when none is.
ALTER TABLE sandboxes ADD COLUMN destroying TEXT NOT NULL DEFAULT '';
