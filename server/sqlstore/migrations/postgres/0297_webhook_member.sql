-- A webhook subscription an organization's member adds (with a key of the
-- organization) names them, as their SSH keys of it do: removing the
-- member deletes it in the same transaction, and a member-role key may
-- delete only the ones it created. '' for a personal account's and for
-- those created before this column (an admin key manages them).
ALTER TABLE webhook_subscriptions ADD COLUMN member_id TEXT NOT NULL DEFAULT '';
