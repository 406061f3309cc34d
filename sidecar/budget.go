package sidecar

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// budget is the sandbox's exec budget (reference §2.4): how many budgeted
// calls it may make and how many seconds they may run in all. Once either is
// used up, the budget is breached for good: every later budgeted call gets
// the same 403, and onBreach tears down what still runs.
type budget struct {
	maxCount   int64   // calls; <= 0 means no limit
	maxSeconds float64 // seconds; <= 0 means no limit
	onBreach   func()  // called once, outside the lock

	mu       sync.Mutex
	count    int64
	seconds  float64
	breached *api.BudgetExceeded
}

func newBudget(maxCount, maxSeconds int) *budget {
	return &budget{maxCount: int64(maxCount), maxSeconds: float64(maxSeconds)}
}

// reserve counts one call before it does any work; it fails when the budget
// is or becomes breached. Under the lock, so concurrent calls never overshoot.
func (b *budget) reserve() error {
	b.mu.Lock()
	first := false
	if b.breached == nil {
		switch {
		case b.maxCount > 0 && b.count >= b.maxCount:
			b.breached = &api.BudgetExceeded{Reason: api.BudgetReasonExecCount, Limit: b.maxCount, Used: float64(b.count)}
		case b.maxSeconds > 0 && b.seconds >= b.maxSeconds:
			used := math.Round(b.seconds*1000) / 1000
			b.breached = &api.BudgetExceeded{Reason: api.BudgetReasonExecSeconds, Limit: int64(b.maxSeconds), Used: used}
		default:
			b.count++
			b.mu.Unlock()
			return nil
		}
		first = true
	}
	d := *b.breached
	b.mu.Unlock()
	if first && b.onBreach != nil {
		b.onBreach()
	}
	return budgetError(d)
}

// record adds the seconds a budgeted call ran.
func (b *budget) record(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seconds += d.Seconds()
}

func budgetError(d api.BudgetExceeded) error {
	what := "calls"
	if d.Reason == api.BudgetReasonExecSeconds {
		what = "seconds of execution"
	}
	e := api.Errorf(http.StatusForbidden, api.CodeSessionBudgetExceeded,
		"session exec budget exceeded: %s of %d %s used", fmt.Sprint(d.Used), d.Limit, what).
		WithHint("the budget is spent for this sandbox; create a new sandbox to go on")
	e.Details = d
	return e
}

// budgeted wraps a handler that counts against the exec budget for both its
// call and the time it runs.
func (h *Handler) budgeted(fn func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := h.sess.budget.reserve(); err != nil {
			return err
		}
		start := time.Now()
		defer func() { h.sess.budget.record(time.Since(start)) }()
		return fn(w, r)
	}
}
