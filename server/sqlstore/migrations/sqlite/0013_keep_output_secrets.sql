-- Issue 17: command output returned to callers is scrubbed of
-- secret-shaped strings unless the account turned that off (PATCH
-- /v1/account {"scrub_output": false}). 1 means off.

ALTER TABLE accounts ADD COLUMN keep_output_secrets INTEGER NOT NULL DEFAULT 0;
