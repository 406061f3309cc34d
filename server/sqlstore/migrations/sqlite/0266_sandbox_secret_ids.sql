-- A sandbox's grant names the secret it was made for (secret_id), not
-- only its name: a secret deleted and created again under the same name
-- is a new secret, not granted to the sandboxes made with the old one.
-- Grants made before are tied to the account's secret of that name now;
-- a grant whose secret is gone keeps '' and is never used again.
ALTER TABLE sandbox_secrets ADD COLUMN secret_id TEXT NOT NULL DEFAULT '';
UPDATE sandbox_secrets SET secret_id = COALESCE((
    SELECT s.id FROM secrets s JOIN sandboxes b ON b.account_id = s.account_id
    WHERE b.id = sandbox_secrets.sandbox_id AND s.name = sandbox_secrets.name), '');
