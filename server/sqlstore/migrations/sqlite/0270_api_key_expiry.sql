-- An API key may expire: past expires_at (Unix microseconds) it is
-- refused as an invalid key. NULL: it never expires (every key before).
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
