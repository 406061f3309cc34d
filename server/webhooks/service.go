package webhooks

import (
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/model"
)

// Defaults of the delivery schedule (docs/webhooks.md).
const (
	DefaultBackoffBase = 30 * time.Second
	MaxBackoff         = time.Hour
	MaxAttempts        = 6
	AttemptTimeout     = 10 * time.Second
	DefaultPoll        = 5 * time.Second
	maxPerAccount      = 20
)

// Deps is what the webhooks service needs of the control plane.
type Deps struct {
	// Store keeps subscriptions and the queue; New wraps it so that every
	// call is authorized against the caller.
	Store Store
	Log   *slog.Logger
	Now   func() time.Time
	// AllowLoopback lets subscriptions and deliveries reach 127.0.0.1:
	// the operator's setting for tests, never a tenant's.
	AllowLoopback bool
	// LocalAddrs lists this host's own addresses, which subscriptions and
	// deliveries never reach; nil means egress.InterfaceAddrs.
	LocalAddrs func() ([]netip.Addr, error)
	// BackoffBase is the first retry's delay (30 s when zero); the n-th
	// retry waits BackoffBase × 2^(n-1), at most an hour.
	BackoffBase time.Duration
	// Poll is how often the worker looks for due deliveries (5 s when zero).
	Poll time.Duration
	// Owner names this server in the leases it takes (a fresh id when "").
	Owner string
	// Sealer keeps the subscriptions' signing secrets and HEC tokens
	// encrypted in the store; nil stores them as they are.
	Sealer Sealer
	// SoleServer says no other server creates subscriptions in Store (a
	// SQLite store): Emit then remembers the accounts that have none
	// instead of reading them for every event (quiet.go).
	SoleServer bool
	// PublicURL is the server's public base URL ("" when unset): the
	// Link header of a paged list points under it.
	PublicURL string
}

// Sealer encrypts values at rest, bound to associated data
// (server/secrets' Keyring is one).
type Sealer interface {
	Seal(plain, ad []byte) (string, error)
	Open(sealed string, ad []byte) ([]byte, error)
}

// Service serves webhook subscriptions and sends their deliveries.
type Service struct {
	d      Deps
	store  Store
	client *http.Client
	wake   chan struct{}
	quiet  *quiet // nil: read the store on every Emit
}

// New returns the service; Store, Log and Now are required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Log == nil || d.Now == nil {
		return nil, errors.New("webhooks: a dependency is missing")
	}
	if d.BackoffBase <= 0 {
		d.BackoffBase = DefaultBackoffBase
	}
	if d.Poll <= 0 {
		d.Poll = DefaultPoll
	}
	if d.Owner == "" {
		d.Owner = model.NewID()
	}
	if d.LocalAddrs == nil {
		d.LocalAddrs = egress.InterfaceAddrs
	}
	s := &Service{
		d: d, store: authorized{d.Store},
		client: safeClient(AttemptTimeout, d.AllowLoopback, d.LocalAddrs),
		wake:   make(chan struct{}, 1),
	}
	if d.SoleServer {
		s.quiet = newQuiet()
	}
	return s, nil
}

// backoff is the delay after the attempt-th failed attempt (1-based).
func (s *Service) backoff(attempt int) time.Duration {
	d := s.d.BackoffBase
	for i := 1; i < attempt && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}
