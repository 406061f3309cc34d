package cli

import (
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestKeyRowExpiry: keys ls shows when a key expires, and a key past it as
// expired, by the server's word when the client's clock is behind (a
// revoked one stays revoked).
func TestKeyRowExpiry(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	soon, past := now.Add(3*time.Hour), now.Add(-2*time.Hour)
	for _, tt := range []struct {
		name            string
		key             api.APIKey
		status, expires string
	}{
		{"never", api.APIKey{}, "active", "never"},
		{"soon", api.APIKey{ExpiresAt: &soon}, "active", "in 3h"},
		{"past", api.APIKey{ExpiresAt: &past}, "expired", "2h ago"},
		{"revoked", api.APIKey{ExpiresAt: &past, RevokedAt: &past}, "revoked", "2h ago"},
		// The server's clock says expired, this client's is behind.
		{"server says expired", api.APIKey{ExpiresAt: &soon, Expired: true}, "expired", "0s ago"},
	} {
		row := keyRow(tt.key, now)
		if got := row[4]; got != tt.status {
			t.Errorf("%s: status %q, want %q", tt.name, got, tt.status)
		}
		if got := row[len(row)-1]; got != tt.expires {
			t.Errorf("%s: expires %q, want %q", tt.name, got, tt.expires)
		}
	}
}
