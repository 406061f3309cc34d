package e2bport

import (
	"context"
	"errors"
	"testing"

	"github.com/boxkite/boxkite/server/internal/httpx"
)

// TestNewRefusesMissingDeps: a port without its dependencies is refused
// at wiring, not at a request.
func TestNewRefusesMissingDeps(t *testing.T) {
	if _, err := New(Deps{}); err == nil {
		t.Fatal("New(Deps{}) = nil error, want a refusal")
	}
}

// TestAuthenticateRefusesBeforeTheStore: a missing or malformed key is
// refused with the guard's answers without a store look-up.
func TestAuthenticateRefusesBeforeTheStore(t *testing.T) {
	a := &Auth{} // no store: a look-up would panic
	for _, tt := range []struct {
		key  string
		want error
	}{
		{"", httpx.ErrNoCredentials},
		{"bxk_live_short", httpx.ErrInvalidKey},
		{"not a key", httpx.ErrInvalidKey},
	} {
		if _, err := a.Authenticate(context.Background(), tt.key); !errors.Is(err, tt.want) {
			t.Errorf("Authenticate(%q) = %v, want %v", tt.key, err, tt.want)
		}
	}
}
