-- Issue 24: an SSH key an organization's member registers for the bastion
-- (with a key of the organization) names them, as their API keys of it
-- do, so that removing the member removes it at once.

ALTER TABLE ssh_keys ADD COLUMN member_id TEXT NOT NULL DEFAULT '';
