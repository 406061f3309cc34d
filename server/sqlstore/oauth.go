package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/oauth"
)

var _ oauth.Store = (*Store)(nil)

// CreateOAuthClient implements oauth.Store.
func (s *Store) CreateOAuthClient(ctx context.Context, c *oauth.Client) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("encode redirect uris: %w", err)
	}
	_, err = s.exec(ctx, s.q(`INSERT INTO oauth_clients (id, name, redirect_uris, registration_hash, created_at) VALUES (?, ?, ?, ?, ?)`),
		c.ID, c.Name, string(uris), c.RegistrationHash, micros(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert oauth client: %w", s.mapErr(err))
	}
	return nil
}

// OAuthClient implements oauth.Store.
func (s *Store) OAuthClient(ctx context.Context, id string) (*oauth.Client, error) {
	var c oauth.Client
	var uris string
	var created int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, name, redirect_uris, registration_hash, created_at FROM oauth_clients WHERE id = ?`), id).
		Scan(&c.ID, &c.Name, &uris, &c.RegistrationHash, &created)
	if err != nil {
		return nil, fmt.Errorf("query oauth client: %w", s.mapErr(err))
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return nil, fmt.Errorf("decode redirect uris: %w", err)
	}
	c.CreatedAt = fromMicros(created)
	return &c, nil
}

// DeleteOAuthClient implements oauth.Store; the codes, grants and
// refresh tokens go with it (ON DELETE CASCADE).
func (s *Store) DeleteOAuthClient(ctx context.Context, id string) error {
	res, err := s.exec(ctx, s.q(`DELETE FROM oauth_clients WHERE id = ?`), id)
	if err != nil {
		return fmt.Errorf("delete oauth client: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("delete oauth client: %w", model.ErrNotFound)
	}
	return nil
}

// CreateOAuthCode implements oauth.Store.
func (s *Store) CreateOAuthCode(ctx context.Context, c *oauth.Code) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO oauth_authorization_codes (hash, client_id, account_id, redirect_uri, code_challenge, resource, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		c.Hash, c.ClientID, c.AccountID, c.RedirectURI, c.Challenge, c.Resource, micros(c.CreatedAt), micros(c.ExpiresAt))
	if err != nil {
		return fmt.Errorf("insert authorization code: %w", s.mapErr(err))
	}
	return nil
}

// OAuthCode implements oauth.Store.
func (s *Store) OAuthCode(ctx context.Context, hash string) (*oauth.Code, error) {
	return s.oauthCode(ctx, s.pool(), hash)
}

// oauthCode reads the code stored under hash through q (the database or
// a transaction).
func (s *Store) oauthCode(ctx context.Context, q execer, hash string) (*oauth.Code, error) {
	var c oauth.Code
	var created, expires int64
	err := q.QueryRowContext(ctx, s.q(`SELECT hash, client_id, account_id, redirect_uri, code_challenge, resource, created_at, expires_at, grant_id FROM oauth_authorization_codes WHERE hash = ?`), hash).
		Scan(&c.Hash, &c.ClientID, &c.AccountID, &c.RedirectURI, &c.Challenge, &c.Resource, &created, &expires, &c.GrantID)
	if err != nil {
		return nil, fmt.Errorf("query authorization code: %w", s.mapErr(err))
	}
	c.CreatedAt, c.ExpiresAt = fromMicros(created), fromMicros(expires)
	return &c, nil
}

// SpendOAuthCode implements oauth.Store: the code is read and marked
// spent by g, and g and its first refresh token stored, in one
// transaction, so of two concurrent exchanges one wins and the other sees
// the winner's grant, and a failure on the way (the grant's insert, the
// commit) leaves the code unspent and no grant behind. Other codes
// expired an hour ago, spent or not, are swept on the way.
func (s *Store) SpendOAuthCode(ctx context.Context, hash string, g *oauth.Grant, first *oauth.RefreshToken) (*oauth.Code, error) {
	var c *oauth.Code
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if c, err = s.oauthCode(ctx, tx, hash); err != nil || c.GrantID != "" {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE oauth_authorization_codes SET grant_id = ? WHERE hash = ? AND grant_id = ''`), g.ID, hash)
		if err != nil {
			return fmt.Errorf("spend authorization code: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			// Spent by a concurrent exchange: report its grant.
			if err := tx.QueryRowContext(ctx, s.q(`SELECT grant_id FROM oauth_authorization_codes WHERE hash = ?`), hash).Scan(&c.GrantID); err != nil {
				return fmt.Errorf("spend authorization code: %w", s.mapErr(err))
			}
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM oauth_authorization_codes WHERE expires_at < ? AND hash <> ?`), micros(time.Now().Add(-time.Hour)), hash); err != nil {
			return fmt.Errorf("sweep authorization codes: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO oauth_grants (id, client_id, account_id, resource, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)`),
			g.ID, g.ClientID, g.AccountID, g.Resource, micros(g.CreatedAt), microsOrZero(g.RevokedAt)); err != nil {
			return fmt.Errorf("insert grant: %w", s.mapErr(err))
		}
		return s.insertRefresh(ctx, tx, first)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (s *Store) insertRefresh(ctx context.Context, tx *sql.Tx, rt *oauth.RefreshToken) error {
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO oauth_refresh_tokens (hash, grant_id, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?)`),
		rt.Hash, rt.GrantID, micros(rt.CreatedAt), micros(rt.ExpiresAt), microsOrZero(rt.UsedAt)); err != nil {
		return fmt.Errorf("insert refresh token: %w", s.mapErr(err))
	}
	return nil
}

// OAuthGrant implements oauth.Store.
func (s *Store) OAuthGrant(ctx context.Context, id string) (*oauth.Grant, error) {
	var g oauth.Grant
	var created, revoked int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, client_id, account_id, resource, created_at, revoked_at FROM oauth_grants WHERE id = ?`), id).
		Scan(&g.ID, &g.ClientID, &g.AccountID, &g.Resource, &created, &revoked)
	if err != nil {
		return nil, fmt.Errorf("query grant: %w", s.mapErr(err))
	}
	g.CreatedAt = fromMicros(created)
	if revoked != 0 {
		g.RevokedAt = fromMicros(revoked)
	}
	return &g, nil
}

// RevokeOAuthGrant implements oauth.Store.
func (s *Store) RevokeOAuthGrant(ctx context.Context, id string, now time.Time) error {
	res, err := s.exec(ctx, s.q(`UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND revoked_at = 0`), micros(now), id)
	if err != nil {
		return fmt.Errorf("revoke grant: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		if _, err := s.OAuthGrant(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// OAuthRefreshToken implements oauth.Store.
func (s *Store) OAuthRefreshToken(ctx context.Context, hash string) (*oauth.RefreshToken, error) {
	var rt oauth.RefreshToken
	var created, expires, used int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT hash, grant_id, created_at, expires_at, used_at FROM oauth_refresh_tokens WHERE hash = ?`), hash).
		Scan(&rt.Hash, &rt.GrantID, &created, &expires, &used)
	if err != nil {
		return nil, fmt.Errorf("query refresh token: %w", s.mapErr(err))
	}
	rt.CreatedAt, rt.ExpiresAt = fromMicros(created), fromMicros(expires)
	if used != 0 {
		rt.UsedAt = fromMicros(used)
	}
	return &rt, nil
}

// RotateOAuthRefreshToken implements oauth.Store: the conditional update
// lets exactly one of two concurrent refreshes spend the token.
func (s *Store) RotateOAuthRefreshToken(ctx context.Context, hash string, now time.Time, next *oauth.RefreshToken) (bool, error) {
	spent := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE oauth_refresh_tokens SET used_at = ? WHERE hash = ? AND used_at = 0`), micros(now), hash)
		if err != nil {
			return fmt.Errorf("spend refresh token: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return nil
		}
		spent = true
		return s.insertRefresh(ctx, tx, next)
	})
	return spent, err
}
