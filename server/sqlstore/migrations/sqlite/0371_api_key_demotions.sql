-- Demotions (session 27): how many times an admin key of an organization
-- was lowered to a member's by its holder's demotion (owner or admin to
-- member). What the key held as an admin key carries the count it had
-- then: a takeover token it minted (the kdem claim) and its requests in
-- flight end when the count grows, on every server (the revocation
-- notice, "demoted:<id>:<count>"), and a promotion back does not revive
-- them, as the count never goes down. 0: never demoted.
ALTER TABLE api_keys ADD COLUMN demotions BIGINT NOT NULL DEFAULT 0;
