-- GET /v1/sandboxes pages by (created_at, id), newest first: the index
-- holds that order, so a page of an account with thousands of past
-- sandboxes reads only its rows. It covers what sandboxes_account_created
-- served.
CREATE INDEX sandboxes_account_created_id ON sandboxes (account_id, created_at, id);
DROP INDEX sandboxes_account_created;
