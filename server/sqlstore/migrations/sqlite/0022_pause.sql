-- Issue 22: paused sandboxes, stored as status 'active' with paused_with
-- set (the status CHECK predates pausing). paused_with is the pause mode ('' while
-- not paused), paused_at since when (microseconds; NULL while not
-- paused), paused_micros the time spent paused before, which lifetimes
-- and monthly hours do not count.

ALTER TABLE sandboxes ADD COLUMN paused_with TEXT NOT NULL DEFAULT '';
ALTER TABLE sandboxes ADD COLUMN paused_at INTEGER;
ALTER TABLE sandboxes ADD COLUMN paused_micros INTEGER NOT NULL DEFAULT 0;
