-- GET /v1/sandboxes?active_only=true (every refresh of boxkite tui, every
-- per-sandbox command that picks the only active sandbox) reads an
-- account's few live sandboxes newest first: with the status in the
-- index before the order, it reads only them, not the account's whole
-- history. It covers what sandboxes_account_status served.
CREATE INDEX sandboxes_account_status_created ON sandboxes (account_id, status, created_at, id);
DROP INDEX sandboxes_account_status;
