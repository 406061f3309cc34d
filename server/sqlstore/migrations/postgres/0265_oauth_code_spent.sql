-- An authorization code is kept once exchanged, with the grant its
-- exchange issued (grant_id; '' before), so that a second exchange
-- revokes that grant (OAuth 2.1 §4.1.3). Spent codes are swept with the
-- expired ones.
ALTER TABLE oauth_authorization_codes ADD COLUMN grant_id TEXT NOT NULL DEFAULT '';
