-- The webhook claim counts each account's deliveries in flight (lease_until
-- in the future) to share the senders fairly between accounts: the index
-- reads those few rows, not every pending retry.
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until);
