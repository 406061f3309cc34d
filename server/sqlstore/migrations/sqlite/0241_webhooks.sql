-- Issue 24: webhooks. A subscription's event types are a JSON array; its
-- secret signs deliveries, so it is kept (the API shows it once). The
-- deliveries are the queue and its log: a pending row is due at
-- next_attempt_at and is sent by whichever server holds its lease
-- (lease_owner until lease_until); times are microseconds, 0 for none.

CREATE TABLE webhook_subscriptions (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url               TEXT NOT NULL,
    event_types       TEXT NOT NULL,
    description       TEXT NOT NULL,
    payload_format    TEXT NOT NULL,
    hec_token         TEXT NOT NULL,
    secret            TEXT NOT NULL,
    active            INTEGER NOT NULL,
    created_at        BIGINT NOT NULL,
    last_triggered_at BIGINT NOT NULL
);

CREATE INDEX webhook_subscriptions_account ON webhook_subscriptions (account_id);

CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    account_id      TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    last_attempt_at BIGINT NOT NULL,
    response_status INTEGER NOT NULL,
    failure_reason  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT NOT NULL,
    lease_owner     TEXT NOT NULL,
    lease_until     BIGINT NOT NULL
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at);
