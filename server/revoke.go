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
// refused at use (parseTakeoverToken). A demotion in an organization
// (admin to member) ends the requests of the member's admin keys of it the
// same way (revocations.demote, cause authz.ErrCredentialDemoted), and the
// takeover tokens they minted are refused at use, the key's role read then.

// recentRevocations is how long a revocation is remembered, for a request
// that authenticated just before it and starts watching just after.
const recentRevocations = time.Minute

// revocations tracks the requests in flight by credential (API key or SSH
// key id) and cancels them when it is revoked.
type revocations struct {
	mu     sync.Mutex
	subs   map[string]map[*watcher]struct{}
	recent map[string]time.Time // id → when it was revoked
}

// watcher is one request's watch: how to end it, and when its API key
// expires (nil: never, or not an API key), so that a revocation found
// past that tells the client its key expired (authz.ErrCredentialExpired).
type watcher struct {
	cancel  context.CancelCauseFunc
	expires *time.Time
}

// cause is why w's request ends when its credential is found revoked at now.
func (w *watcher) cause(now time.Time) error {
	if w.expires != nil && !now.Before(*w.expires) {
		return authz.ErrCredentialExpired
	}
	return authz.ErrCredentialRevoked
}

func newRevocations() *revocations {
	return &revocations{subs: map[string]map[*watcher]struct{}{}, recent: map[string]time.Time{}}
}

// watch cancels ctx's request (cancel) when credential id, an API key
// expiring at expires (nil: never), is revoked, or at once if it was a
// moment ago. stop ends the watch.
func (rv *revocations) watch(id string, cancel context.CancelCauseFunc, expires *time.Time, now time.Time) (stop func()) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	w := &watcher{cancel: cancel, expires: expires}
	if at, ok := rv.recent[id]; ok && now.Sub(at) < recentRevocations {
		cancel(w.cause(now))
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

// demote ends every request of API key id, whose holder was demoted to
// member, with authz.ErrCredentialDemoted. Unlike revoke it remembers
// nothing: the key stays valid, as a member's, so requests it makes from
// now on (authorized at that role) are not ended.
func (rv *revocations) demote(id string) {
	rv.mu.Lock()
	var ends []*watcher
	for w := range rv.subs[id] {
		ends = append(ends, w)
	}
	delete(rv.subs, id)
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
	switch ri := authz.From(r.Context()); {
	case ri.Key != nil:
		expires = ri.Key.ExpiresAt
	case ri.Grant != nil:
		expires = ri.Grant.KeyExpiresAt // a takeover token's minting key
	}
	stop := s.watchCredential(id, expires, cancel)
	return r.WithContext(ctx), func() {
		stop()
		cancel(nil)
	}
}

// watchCredential calls cancel when credential id is revoked, or, for an
// API key expiring at expires (nil: never), then, by the server's clock:
// a key's expiry ends what it holds as its revocation would. stop ends
// the watch.
func (s *Server) watchCredential(id string, expires *time.Time, cancel context.CancelCauseFunc) (stop func()) {
	unwatch := s.revocations.watch(id, cancel, expires, s.now())
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
			func(id string) { s.revocations.revoke(id, s.now()) },
			func() { s.recheckCredentials(ctx) })
	})
}

// recheckCredentials ends the requests of credentials in flight that the
// store no longer knows as valid at the server's clock: revoked, deleted,
// or API keys past their expiry (whose requests are told so).
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
