-- Issue 22 (third migration): a sandbox created with auto_pause is paused
-- at expires_at instead of destroyed. 1 means on.

ALTER TABLE sandboxes ADD COLUMN auto_pause INTEGER NOT NULL DEFAULT 0;
