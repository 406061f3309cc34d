package exec

import (
	"errors"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// A reservation is given back once, however often its release runs (a
// handler's defer after a panic, say), and only what it took.
func TestHeldBudgetReleaseOnce(t *testing.T) {
	b := NewHeldBudget(100, 60)
	rel1, err := b.Reserve("a", 40, "exec", heldHint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve("a", 40, "exec", heldHint); !isStatus(err, http.StatusTooManyRequests) {
		t.Fatalf("past the account's share: %v, want 429", err)
	}
	rel2, err := b.Reserve("b", 60, "exec", heldHint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve("c", 1, "exec", heldHint); !isStatus(err, http.StatusServiceUnavailable) {
		t.Fatalf("past the server's budget: %v, want 503", err)
	}
	rel1()
	rel1()
	if total, a := b.Used("a"); total != 60 || a != 0 {
		t.Fatalf("after a's release (twice): used %d, a %d; want 60, 0", total, a)
	}
	rel2()
	if total, _ := b.Used("b"); total != 0 {
		t.Fatalf("after every release: used %d", total)
	}
}

func isStatus(err error, status int) bool {
	e, ok := errors.AsType[*api.Error](err)
	return ok && e.Status == status
}
