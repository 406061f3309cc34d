-- Every create reads its account's usage this month (before it starts,
-- and again in its reservation, which holds the write slot): the hours of
-- every sandbox the account created since the month began, which needs
-- each one's destroyed_at, paused_at and paused_micros. With them in the
-- index that serves the range, the read takes them from the index's pages
-- instead of looking up each sandbox's row (issue 27: at 10,000 sandboxes
-- in a month a read took 7.8-18.6 ms, 1.3 ms from the index). The index
-- keeps its name and its first columns, which serve GET /v1/sandboxes's
-- pages (0277).
DROP INDEX sandboxes_account_created_id;
CREATE INDEX sandboxes_account_created_id ON sandboxes (account_id, created_at, id, destroyed_at, paused_at, paused_micros);
