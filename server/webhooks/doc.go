// Package webhooks is the webhooks subsystem: subscriptions
// (/v1/webhooks), their deliveries log, the queue of deliveries kept in
// the store and the worker that sends them, signed with the
// subscription's secret, retried with exponential backoff and claimed
// under a lease so several servers on one database send each at least
// once (docs/webhooks.md).
package webhooks
