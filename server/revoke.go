package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/model"
)

// Revocation reaches what a credential already holds (issue 17, finding
// 3). Every request authenticated by an API key, or by a takeover token
// (which names the API key or SSH key that minted it), runs with a context
// that is cancelled, with authz.ErrCredentialRevoked as its cause, the moment
// that credential is revoked: DELETE /v1/api-keys/{id} or DELETE
// /v1/account/ssh-keys/{id} here, or on another server sharing the
// database (Postgres NOTIFY, RevocationListener). Watch streams,
// takeovers, process streams and interactive execs end with it; a
// streamed exec stops streaming while its command runs on, audited
// (proxy.Forward's handover). Takeover tokens a revoked credential minted are
// refused at use (parseTakeoverToken).
//
// A demotion in an organization (owner or admin to member) ends what the
// member's admin keys of it held as admin keys the same way, though the
// keys go on as member keys: each such key counts one more demotion
// (model.APIKey.Demotions, in the demotion's transaction, with a notice to
// the other servers), every request carries the count its key had when it
// was authenticated, and the requests behind the new count end with cause
// authz.ErrCredentialDemoted (revocations.demote). A takeover token
// carries its minting key's count too and is refused once it is behind.
// The count never goes down: a promotion back revives nothing.

// recentRevocations is how long a revocation is remembered, for a request
// that authenticated just before it and starts watching just after.
const recentRevocations = time.Minute

// revocations tracks the requests in flight by credential (API key or SSH
// key id) and cancels them when it is revoked.
type revocations struct {
	mu      sync.Mutex
	subs    map[string]map[*watcher]struct{}
	recent  map[string]time.Time // id → when it was revoked
	demoted map[string]demotion  // id → its latest demotion, for a while
}

// demotion is an API key's count of demotions, as of at.
type demotion struct {
	n  int64
	at time.Time
}

// watcher is one request's watch: how to end it, when its API key
// expires (nil: never, or not an API key), so that a revocation found
// past that tells the client its key expired (authz.ErrCredentialExpired),
// and its API key's count of demotions when it was authenticated.
type watcher struct {
	cancel    context.CancelCauseFunc
	expires   *time.Time
	demotions int64
}

// cause is why w's request ends when its credential is found revoked at now.
func (w *watcher) cause(now time.Time) error {
	if w.expires != nil && !now.Before(*w.expires) {
		return authz.ErrCredentialExpired
	}
	return authz.ErrCredentialRevoked
}

func newRevocations() *revocations {
	return &revocations{subs: map[string]map[*watcher]struct{}{}, recent: map[string]time.Time{}, demoted: map[string]demotion{}}
}

// watch cancels ctx's request (cancel) when credential id, an API key
// expiring at expires (nil: never) with demotions demotions when the
// request was authenticated, is revoked or demoted again, or at once if
// that was a moment ago. stop ends the watch.
func (rv *revocations) watch(id string, cancel context.CancelCauseFunc, expires *time.Time, demotions int64, now time.Time) (stop func()) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	w := &watcher{cancel: cancel, expires: expires, demotions: demotions}
	if at, ok := rv.recent[id]; ok && now.Sub(at) < recentRevocations {
		cancel(w.cause(now))
		return func() {}
	}
	if d, ok := rv.demoted[id]; ok && now.Sub(d.at) < recentRevocations && d.n > demotions {
		cancel(authz.ErrCredentialDemoted)
		return func() {}
	}
	m := rv.subs[id]
	if m == nil {
		m = map[*watcher]struct{}{}
		rv.subs[id] = m
	}
	m[w] = struct{}{}
	return func() {
		rv.mu.Lock()
		defer rv.mu.Unlock()
		if m := rv.subs[id]; m != nil {
			delete(m, w)
			if len(m) == 0 {
				delete(rv.subs, id)
			}
		}
	}
}

// revoke cancels every request of credential id and remembers it for a
// while. It may be called more than once for one credential.
func (rv *revocations) revoke(id string, now time.Time) {
	rv.mu.Lock()
	var ends []*watcher
	for w := range rv.subs[id] {
		ends = append(ends, w)
	}
	delete(rv.subs, id)
	for old, at := range rv.recent {
		if now.Sub(at) >= recentRevocations {
			delete(rv.recent, old)
		}
	}
	rv.recent[id] = now
	rv.mu.Unlock()
	for _, w := range ends {
		w.cancel(w.cause(now))
	}
}

// demote ends the requests of API key id authenticated before its count
// of demotions reached n, with authz.ErrCredentialDemoted, and remembers
// n for a while, for a request that authenticated just before and starts
// watching just after. Its requests at count n (as a member key) go on.
// A notice that arrives late (n not above what is known) ends nothing new.
func (rv *revocations) demote(id string, n int64, now time.Time) {
	rv.mu.Lock()
	var ends []*watcher
	for w := range rv.subs[id] {
		if w.demotions < n {
			ends = append(ends, w)
			delete(rv.subs[id], w)
		}
	}
	if len(rv.subs[id]) == 0 {
		delete(rv.subs, id)
	}
	for old, d := range rv.demoted {
		if now.Sub(d.at) >= recentRevocations {
			delete(rv.demoted, old)
		}
	}
	if d, ok := rv.demoted[id]; !ok || d.n < n {
		rv.demoted[id] = demotion{n: n, at: now}
	}
	rv.mu.Unlock()
	for _, w := range ends {
		w.cancel(authz.ErrCredentialDemoted)
	}
}

// watched returns the credentials with requests in flight.
func (rv *revocations) watched() []string {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return slices.Collect(maps.Keys(rv.subs))
}

// revocableCredential is the credential r was authenticated by: its API
// key, or the key (API or SSH) that minted its takeover token; "" for an
// access token or none.
func revocableCredential(r *http.Request) string {
	ri := authz.From(r.Context())
	switch {
	case ri == nil:
		return ""
	case ri.Key != nil:
		return ri.Key.ID
	case ri.Grant != nil:
		return ri.Grant.KeyID
	}
	return ""
}

// withRevocation returns r with a context that ends when r's credential is
// revoked, and the function that stops watching for that.
func (s *Server) withRevocation(r *http.Request) (*http.Request, func()) {
	id := revocableCredential(r)
	if id == "" {
		return r, func() {}
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	var expires *time.Time
	var demotions int64
	switch ri := authz.From(r.Context()); {
	case ri.Key != nil:
		expires, demotions = ri.Key.ExpiresAt, ri.Key.Demotions
	case ri.Grant != nil:
		// a takeover token's minting key
		expires, demotions = ri.Grant.KeyExpiresAt, ri.Grant.KeyDemotions
	}
	stop := s.watchCredential(id, expires, demotions, cancel)
	return r.WithContext(ctx), func() {
		stop()
		cancel(nil)
	}
}

// watchCredential calls cancel when credential id is revoked, or demoted
// past demotions (an API key's count when the request was authenticated),
// or, for an API key expiring at expires (nil: never), then, by the
// server's clock: a key's expiry ends what it holds as its revocation
// would. stop ends the watch.
func (s *Server) watchCredential(id string, expires *time.Time, demotions int64, cancel context.CancelCauseFunc) (stop func()) {
	unwatch := s.revocations.watch(id, cancel, expires, demotions, s.now())
	if expires == nil {
		return unwatch
	}
	stopTimer := s.afterFunc(expires.Sub(s.now()), func() { cancel(authz.ErrCredentialExpired) })
	return func() {
		stopTimer()
		unwatch()
	}
}

// listenRevocations runs the store's RevocationListener, if it has one,
// until ctx is done, reconnecting after failures. Each time it is
// (re)connected, the credentials of requests in flight are checked
// against the store, for revocations it may have missed.
func (s *Server) listenRevocations(ctx context.Context) {
	l, ok := s.rawStore().(model.RevocationListener)
	if !ok {
		return
	}
	s.keepListening(ctx, "revocations", func() error {
		return l.ListenRevocations(ctx,
			func(rv model.Revocation) {
				if rv.Demotions > 0 {
					s.revocations.demote(rv.CredentialID, rv.Demotions, s.now())
				} else {
					s.revocations.revoke(rv.CredentialID, s.now())
				}
			},
			func() { s.recheckCredentials(ctx) })
	})
}

// recheckCredentials ends the requests of credentials in flight that the
// store no longer knows as valid at the server's clock: revoked, deleted,
// or API keys past their expiry (whose requests are told so); and those
// authenticated before their API key's latest demotion.
func (s *Server) recheckCredentials(ctx context.Context) {
	ids := s.revocations.watched()
	if len(ids) == 0 {
		return
	}
	gone, err := s.store.RevokedCredentials(ctx, ids, s.now())
	if err != nil {
		s.log.WarnContext(ctx, "check credentials in flight", "err", err)
		return
	}
	for _, id := range gone {
		s.revocations.revoke(id, s.now())
	}
	demoted, err := s.store.KeyDemotions(ctx, ids)
	if err != nil {
		s.log.WarnContext(ctx, "check demotions in flight", "err", err)
		return
	}
	for id, n := range demoted {
		s.revocations.demote(id, n, s.now())
	}
}

// credentialValid reports whether the API key or SSH key id is still
// valid: not revoked, not expired, not deleted.
func (s *Server) credentialValid(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	gone, err := s.store.RevokedCredentials(ctx, []string{id}, s.now())
	if err != nil {
		return false, err
	}
	return len(gone) == 0, nil
}

// keyRole returns the role API key id acts with now, "" when it is not
// valid, and its count of demotions: what a takeover token's use checks
// its minting key against.
func (s *Server) keyRole(ctx context.Context, id string) (string, int64, error) {
	return s.store.APIKeyRole(ctx, id, s.now())
}
