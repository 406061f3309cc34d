-- Issue 22 (second migration): the background processes that ran when a
-- sandbox was paused with mode filesystem, as JSON (an array of
-- api.ProcessInfo; '' when none), so resume restarts those started with
-- restart and reports the others as ended, across a server restart too.

ALTER TABLE sandboxes ADD COLUMN paused_processes TEXT NOT NULL DEFAULT '';
