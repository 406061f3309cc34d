package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/webhooks"
)

var _ webhooks.Store = (*Store)(nil)

const webhookColumns = `id, account_id, url, event_types, description, payload_format, hec_token, secret, active, created_at, last_triggered_at, member_id`

func scanWebhook(r rowScanner) (*webhooks.Subscription, error) {
	var w webhooks.Subscription
	var types string
	var active int
	var created, last int64
	if err := r.Scan(&w.ID, &w.AccountID, &w.URL, &types, &w.Description, &w.PayloadFormat, &w.HECToken, &w.Secret, &active, &created, &last, &w.MemberID); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(types), &w.EventTypes); err != nil {
		return nil, fmt.Errorf("decode event types: %w", err)
	}
	w.Active = active != 0
	w.CreatedAt = fromMicros(created)
	if last != 0 {
		w.LastTriggeredAt = fromMicros(last)
	}
	return &w, nil
}

// CreateWebhook implements webhooks.Store.
// The account's row is locked (on Postgres; SQLite serialises writers)
// so two creates cannot both pass the count.
func (s *Store) CreateWebhook(ctx context.Context, w *webhooks.Subscription, limit int) error {
	types, err := json.Marshal(w.EventTypes)
	if err != nil {
		return fmt.Errorf("encode event types: %w", err)
	}
	active := 0
	if w.Active {
		active = 1
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var id string
		if err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM accounts WHERE id = ?`+s.d.forUpdate), w.AccountID).Scan(&id); err != nil {
			return fmt.Errorf("lock account: %w", s.mapErr(err))
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM webhook_subscriptions WHERE account_id = ?`), w.AccountID).Scan(&n); err != nil {
			return fmt.Errorf("count webhooks: %w", err)
		}
		if n >= limit {
			return webhooks.ErrLimit
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO webhook_subscriptions (`+webhookColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			w.ID, w.AccountID, w.URL, string(types), w.Description, w.PayloadFormat, w.HECToken, w.Secret, active, micros(w.CreatedAt), microsOrZero(w.LastTriggeredAt), w.MemberID)
		if err != nil {
			return fmt.Errorf("insert webhook: %w", s.mapErr(err))
		}
		return nil
	})
}

// Webhooks implements webhooks.Store.
func (s *Store) Webhooks(ctx context.Context, accountID string) ([]*webhooks.Subscription, error) {
	return queryAll(ctx, s, "webhooks", scanWebhook, `SELECT `+webhookColumns+` FROM webhook_subscriptions WHERE account_id = ? ORDER BY created_at DESC, id`, accountID)
}

// DeleteWebhook implements webhooks.Store.
func (s *Store) DeleteWebhook(ctx context.Context, accountID, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM webhook_subscriptions WHERE id = ? AND account_id = ?`), id, accountID)
		if err != nil {
			return fmt.Errorf("delete webhook: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("delete webhook: %w", webhooks.ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM webhook_deliveries WHERE webhook_id = ?`), id); err != nil {
			return fmt.Errorf("delete webhook deliveries: %w", err)
		}
		return nil
	})
}

// deleteMemberWebhooks deletes, in tx, the webhook subscriptions
// accountID created in the organization orgID and their deliveries.
func (s *Store) deleteMemberWebhooks(ctx context.Context, tx *sql.Tx, orgID, accountID string) error {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM webhook_deliveries WHERE webhook_id IN
		(SELECT id FROM webhook_subscriptions WHERE account_id = ? AND member_id = ?)`), orgID, accountID); err != nil {
		return fmt.Errorf("delete member's webhook deliveries: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM webhook_subscriptions WHERE account_id = ? AND member_id = ?`), orgID, accountID); err != nil {
		return fmt.Errorf("delete member's webhooks: %w", err)
	}
	return nil
}

const deliveryColumns = `d.id, d.webhook_id, d.account_id, d.event_id, d.event_type, d.payload, d.status, d.attempts, d.next_attempt_at,
	d.last_attempt_at, d.response_status, d.failure_reason, d.created_at, d.delivered_at, d.lease_owner, d.lease_until`

func scanDelivery(r rowScanner, extra ...any) (*webhooks.Delivery, error) {
	var d webhooks.Delivery
	var payload string
	var next, last, created, delivered, until int64
	dest := append([]any{
		&d.ID, &d.WebhookID, &d.AccountID, &d.EventID, &d.EventType, &payload, &d.Status, &d.Attempts, &next,
		&last, &d.ResponseStatus, &d.FailureReason, &created, &delivered, &d.LeaseOwner, &until,
	}, extra...)
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	d.Payload = []byte(payload)
	d.NextAttemptAt, d.CreatedAt = fromMicros(next), fromMicros(created)
	d.LastAttemptAt, d.DeliveredAt, d.LeaseUntil = timeOrZero(last), timeOrZero(delivered), timeOrZero(until)
	return &d, nil
}

// WebhookDeliveries implements webhooks.Store.
// The cursor is a keyset (created_at, id), as ListSandboxPage's: a
// delivery queued between two pages moves no other across the boundary.
func (s *Store) WebhookDeliveries(ctx context.Context, accountID, webhookID string, p webhooks.DeliveryPage) ([]*webhooks.Delivery, error) {
	query := `SELECT ` + deliveryColumns + ` FROM webhook_deliveries d WHERE d.account_id = ? AND d.webhook_id = ?`
	args := []any{accountID, webhookID}
	if p.AfterID != "" {
		at := micros(p.AfterCreated)
		query += ` AND (d.created_at < ? OR (d.created_at = ? AND d.id < ?))`
		args = append(args, at, at, p.AfterID)
	}
	query += ` ORDER BY d.created_at DESC, d.id DESC LIMIT ? OFFSET ?`
	args = append(args, p.Limit, p.Offset)
	return queryAll(ctx, s, "webhook deliveries", func(r rowScanner) (*webhooks.Delivery, error) { return scanDelivery(r) }, query, args...)
}

// WebhookDelivery implements webhooks.Store.
func (s *Store) WebhookDelivery(ctx context.Context, accountID, webhookID, id string) (*webhooks.Delivery, error) {
	d, err := scanDelivery(s.db.QueryRowContext(ctx, s.q(`SELECT `+deliveryColumns+` FROM webhook_deliveries d
		WHERE d.account_id = ? AND d.webhook_id = ? AND d.id = ?`), accountID, webhookID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("webhook delivery %s: %w", id, webhooks.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load webhook delivery: %w", err)
	}
	return d, nil
}

// EnqueueWebhookDeliveries implements webhooks.Store.
func (s *Store) EnqueueWebhookDeliveries(ctx context.Context, ds []*webhooks.Delivery) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, d := range ds {
			_, err := tx.ExecContext(ctx, s.q(`INSERT INTO webhook_deliveries (id, webhook_id, account_id, event_id, event_type, payload, status, attempts,
				next_attempt_at, last_attempt_at, response_status, failure_reason, created_at, delivered_at, lease_owner, lease_until)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, '', ?, 0, '', 0)`),
				d.ID, d.WebhookID, d.AccountID, d.EventID, d.EventType, string(d.Payload), d.Status, d.Attempts, micros(d.NextAttemptAt), micros(d.CreatedAt))
			if err != nil {
				return fmt.Errorf("insert webhook delivery: %w", s.mapErr(err))
			}
		}
		return nil
	})
}

// webhookFairShare (migration 0279 indexes the count) is how many deliveries one account may hold leased
// (across every server) before its due rows wait behind other accounts'
// due rows: half of a server's 8 senders, so that one account's slow
// receiver and backlog cannot hold every sender and starve the others.
// Alone, an account still gets every sender (the claim is work-conserving).
const webhookFairShare = 4

// ClaimWebhookDeliveries implements webhooks.Store. One UPDATE takes the
// lease: on Postgres a concurrent claim of the same row waits for this
// one and then, re-checking lease_until, skips it; SQLite has one writer.
// It first takes the oldest due rows of accounts holding fewer than
// webhookFairShare leases, then, if senders are left, any due rows.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, owner string, now, until time.Time, limit int) ([]*webhooks.Claim, error) {
	var ids []string
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		fair, err := claimDeliveries(ctx, tx, s.q(`UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?
			WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? AND lease_until <= ?
				AND account_id NOT IN (SELECT account_id FROM webhook_deliveries WHERE status = 'pending' AND lease_until > ?
					GROUP BY account_id HAVING COUNT(*) >= ?)
				ORDER BY next_attempt_at LIMIT ?)
			AND status = 'pending' AND lease_until <= ? RETURNING id`),
			owner, micros(until), micros(now), micros(now), micros(now), webhookFairShare, limit, micros(now))
		if err != nil || len(fair) == limit {
			ids = fair
			return err
		}
		rest, err := claimDeliveries(ctx, tx, s.q(`UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?
			WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? AND lease_until <= ?
				ORDER BY next_attempt_at LIMIT ?)
			AND status = 'pending' AND lease_until <= ? RETURNING id`),
			owner, micros(until), micros(now), micros(now), limit-len(fair), micros(now))
		ids = append(fair, rest...)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*webhooks.Claim, 0, len(ids))
	for _, id := range ids {
		var c webhooks.Claim
		d, err := scanDelivery(s.db.QueryRowContext(ctx, s.q(`SELECT `+deliveryColumns+`, w.url, w.secret, w.payload_format, w.hec_token
			FROM webhook_deliveries d JOIN webhook_subscriptions w ON w.id = d.webhook_id WHERE d.id = ? AND d.lease_owner = ?`), id, owner),
			&c.URL, &c.Secret, &c.PayloadFormat, &c.HECToken)
		if err == sql.ErrNoRows {
			continue // its subscription was deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("load claimed delivery: %w", err)
		}
		c.Delivery = *d
		out = append(out, &c)
	}
	return out, nil
}

// claimDeliveries runs one claiming UPDATE … RETURNING id.
func claimDeliveries(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("scan claimed delivery: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// FinishWebhookAttempt implements webhooks.Store.
func (s *Store) FinishWebhookAttempt(ctx context.Context, owner string, d *webhooks.Delivery) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?,
			response_status = ?, failure_reason = ?, delivered_at = ?, lease_owner = '', lease_until = 0
			WHERE id = ? AND lease_owner = ?`),
			d.Status, d.Attempts, micros(d.NextAttemptAt), microsOrZero(d.LastAttemptAt), d.ResponseStatus, d.FailureReason, microsOrZero(d.DeliveredAt), d.ID, owner)
		if err != nil {
			return fmt.Errorf("record webhook attempt: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 || d.Status != webhooks.StatusDelivered {
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE webhook_subscriptions SET last_triggered_at = ? WHERE id = ?`), micros(d.DeliveredAt), d.WebhookID); err != nil {
			return fmt.Errorf("touch webhook: %w", err)
		}
		return nil
	})
}

func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

func timeOrZero(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return fromMicros(us)
}
