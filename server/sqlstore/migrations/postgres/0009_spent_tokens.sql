-- Issue 9: single-use takeover tokens, spent once across every server that
-- shares this database. Rows past expires_at are deleted as tokens are spent.

CREATE TABLE spent_tokens (
    jti        TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);

CREATE INDEX spent_tokens_expires ON spent_tokens (expires_at);
