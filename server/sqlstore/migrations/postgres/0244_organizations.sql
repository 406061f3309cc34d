-- Issue 24: organizations. An organization is a tenant like a personal
-- account: it has a row in accounts (its email is "org:" + its id, which no
-- person can sign up with), so every account-scoped record (sandboxes,
-- keys, images, volumes, secrets, snapshots, webhooks, audit) belongs to it
-- through the account_id it already has. People reach it as members; an
-- API key of an organization names the member who holds it (member_id),
-- and stops working the moment that person is no longer a member.
-- Quotas of 0 mean the server's per-account limits.

CREATE TABLE organizations (
    id                       TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    name                     TEXT NOT NULL,
    created_at               BIGINT NOT NULL,
    max_concurrent_sandboxes INTEGER NOT NULL DEFAULT 0,
    monthly_sandbox_hours    DOUBLE PRECISION NOT NULL DEFAULT 0
);

CREATE TABLE organization_members (
    org_id     TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, account_id)
);

CREATE INDEX organization_members_account ON organization_members (account_id);

-- An invite's token is shown once to the inviter; only its SHA-256 is
-- kept. accepted_at is set once, by the accept that uses it.
CREATE TABLE organization_invites (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    token_hash  TEXT NOT NULL UNIQUE,
    invited_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    accepted_at BIGINT,
    accepted_by TEXT NOT NULL DEFAULT ''
);

CREATE INDEX organization_invites_org ON organization_invites (org_id);

ALTER TABLE api_keys ADD COLUMN member_id TEXT NOT NULL DEFAULT '';
