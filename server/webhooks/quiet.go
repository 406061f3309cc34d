package webhooks

import "sync"

// maxQuiet bounds how many quiet accounts are remembered; past it the
// memory starts over (each forgotten account costs one read again).
const maxQuiet = 1 << 16

// quiet remembers the accounts known to have no subscription, so that
// Emit answers for them without reading the store: the exec path emits
// an audit_log.entry event for every exec, and most accounts subscribe to
// nothing. It is only sound when this server is the only one that
// creates subscriptions in its store (Deps.SoleServer); a store several
// servers share is read on every Emit, because another server's notice
// of a new subscription would arrive after that server has answered.
//
// A subscription's creation calls forget once its transaction is over;
// an Emit that read "none" remembers it only if no creation ended while
// it read (gen unchanged), so a read that raced a creation is never kept.
// Deleting a subscription needs nothing: only "none" is remembered; any
// future way of adding one (re-activating, an import) must forget too.
type quiet struct {
	mu   sync.Mutex
	gen  uint64
	none map[string]struct{}
}

func newQuiet() *quiet { return &quiet{none: make(map[string]struct{})} }

// known reports whether the account is known to have no subscription and,
// if not, the generation to pass to remember after reading the store.
func (q *quiet) known(accountID string) (bool, uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.none[accountID]
	return ok, q.gen
}

// remember records that the account had no subscription in a read begun
// at generation gen, unless a creation ended since.
func (q *quiet) remember(accountID string, gen uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if gen != q.gen {
		return
	}
	if len(q.none) >= maxQuiet {
		clear(q.none)
	}
	q.none[accountID] = struct{}{}
}

// forget is called after each creation of one of the account's
// subscriptions, whether it committed or not.
func (q *quiet) forget(accountID string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.gen++
	delete(q.none, accountID)
}
