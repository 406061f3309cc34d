package secrets

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/model"
)

// Config configures a Service.
type Config struct {
	// Keyring wraps the data keys; nil means the server keeps no secrets
	// (every route answers 503 secrets_unavailable).
	Keyring *Keyring
	// Resolver looks names up (allowed hosts, request hosts); nil means
	// the system resolver.
	Resolver egress.Resolver
	// PermitForTests, when set, exempts the addresses it returns true for
	// from the forbidden ranges, so tests can reach a server on 127.0.0.1.
	// Never set it outside tests.
	PermitForTests func(netip.Addr) bool
	// DialForTests, when set, makes the broker's connections (to a checked
	// address and the URL's port) instead of the system dialer, and
	// RootCAsForTests is the pool it verifies TLS with instead of the
	// system's: tests reach an HTTPS server on 127.0.0.1 as if it served
	// port 443. Never set them outside tests.
	DialForTests    func(ctx context.Context, network, addr string) (net.Conn, error)
	RootCAsForTests *x509.CertPool
	// LocalAddrs lists this host's own addresses, which the broker never
	// sends to (a public one reaches, from the host, what it binds to
	// every address); nil means egress.InterfaceAddrs.
	LocalAddrs func() ([]netip.Addr, error)
	// Limit is how many secrets an account may hold; 0 means
	// api.MaxSecretsPerAccount.
	Limit int
	Log   *slog.Logger
	Now   func() time.Time
}

// Service keeps the accounts' secrets and brokers requests with them.
// A nil *Service is a server without secrets: its methods answer
// secrets_unavailable.
type Service struct {
	store    Store
	keys     *Keyring
	resolver egress.Resolver
	permit   func(netip.Addr) bool
	local    func() ([]netip.Addr, error)
	limit    int
	log      *slog.Logger
	now      func() time.Time
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	roots    *x509.CertPool // nil: the system's
}

// Keyring is the server's keyring, for other subsystems' values at rest
// (Keyring.Seal); nil on a nil Service.
func (s *Service) Keyring() *Keyring {
	if s == nil {
		return nil
	}
	return s.keys
}

// New returns a Service over store, or nil when cfg has no keyring. Every
// call it makes to store is authorized against the request's caller
// (authorized).
func New(store Store, cfg Config) *Service {
	if cfg.Keyring == nil || store == nil {
		return nil
	}
	s := &Service{
		store: authorized{store}, keys: cfg.Keyring, resolver: cfg.Resolver, permit: cfg.PermitForTests,
		limit: cfg.Limit, log: cfg.Log, now: cfg.Now,
	}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	if s.local = cfg.LocalAddrs; s.local == nil {
		s.local = egress.InterfaceAddrs
	}
	if s.limit == 0 {
		s.limit = api.MaxSecretsPerAccount
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.dial, s.roots = cfg.DialForTests, cfg.RootCAsForTests
	if s.dial == nil {
		s.dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	return s
}

var errUnavailable = &api.Error{
	Status: http.StatusServiceUnavailable, Code: api.CodeSecretsUnavailable,
	Message: "this server keeps no secrets: it was started without a secrets key",
	Hint:    "start boxkite-server with --secrets-key-file (or secrets-key in --secrets-dir); see docs/secrets.md",
}

func (s *Service) ready() error {
	if s == nil {
		return errUnavailable
	}
	return nil
}

// stamp is now as stored: microseconds, UTC, so an answer shows the
// time a later read shows.
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func checkValue(v string) error {
	if v == "" || len(v) > api.MaxSecretValueLen {
		return api.Invalid("value", fmt.Sprintf("value must be 1 to %d bytes", api.MaxSecretValueLen), "")
	}
	if !utf8.ValidString(v) {
		return api.Invalid("value", "value must be UTF-8 text", "encode binary secrets, e.g. in base64")
	}
	return nil
}

// Create stores a new secret of the account.
func (s *Service) Create(ctx context.Context, accountID string, req api.CreateSecretRequest) (api.Secret, error) {
	if err := s.ready(); err != nil {
		return api.Secret{}, err
	}
	if err := api.CheckSecretName(req.Name); err != nil {
		return api.Secret{}, err
	}
	if err := checkValue(req.Value); err != nil {
		return api.Secret{}, err
	}
	switch req.TrustTier {
	case "", api.TrustTierTestnet:
	default:
		return api.Secret{}, &api.Error{
			Status: http.StatusUnprocessableEntity, Code: api.CodeUnsupportedTrustTier,
			Message: fmt.Sprintf("trust_tier %q is not supported", req.TrustTier), Hint: `omit trust_tier, or use "testnet"`,
		}
	}
	hosts, err := s.checkHosts(ctx, req.AllowedHosts)
	if err != nil {
		return api.Secret{}, err
	}
	now := s.stamp()
	r := &Record{ID: newID(), AccountID: accountID, Name: req.Name, AllowedHosts: hosts, TrustTier: req.TrustTier, CreatedAt: now, UpdatedAt: now}
	if err := s.keys.seal(r, []byte(req.Value)); err != nil {
		return api.Secret{}, fmt.Errorf("seal secret: %w", err)
	}
	switch err := s.store.CreateSecret(ctx, r, s.limit); {
	case errors.Is(err, ErrNameTaken):
		return api.Secret{}, api.Errorf(http.StatusConflict, api.CodeSecretNameTaken, "a secret named %q exists", req.Name).
			WithHint("pick another name, or change its value with `boxkite secrets set` (PUT /v1/secrets/{id})")
	case errors.Is(err, ErrLimit):
		e := api.Errorf(http.StatusTooManyRequests, api.CodeSecretLimitReached, "the account holds %d secrets, the most it may", s.limit).
			WithHint("delete one with `boxkite secrets rm NAME` first")
		e.Details = map[string]int{"limit": s.limit}
		return api.Secret{}, e
	case err != nil:
		return api.Secret{}, fmt.Errorf("create secret: %w", err)
	}
	return r.ToAPI(), nil
}

// List returns the account's secrets, by name, without values.
func (s *Service) List(ctx context.Context, accountID string) ([]api.Secret, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rs, err := s.store.Secrets(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	out := make([]api.Secret, len(rs))
	for i, r := range rs {
		out[i] = r.ToAPI()
	}
	return out, nil
}

// find returns the account's secret with id idOrName, or else the one
// named so: the CLI names secrets, the API has ids.
func (s *Service) find(ctx context.Context, accountID, idOrName string) (*Record, error) {
	rs, err := s.store.Secrets(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	for _, r := range rs {
		if r.ID == idOrName {
			return r, nil
		}
	}
	for _, r := range rs {
		if r.Name == idOrName {
			return r, nil
		}
	}
	return nil, notFound(idOrName)
}

func notFound(id string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "secret %s not found", id).
		WithHint("list them with `boxkite secrets ls`")
}

// Update replaces a secret's value (a new data key, wrapped by the
// primary key) and, when given, its allowed hosts.
func (s *Service) Update(ctx context.Context, accountID, id string, req api.UpdateSecretRequest) (api.Secret, error) {
	if err := s.ready(); err != nil {
		return api.Secret{}, err
	}
	if err := checkValue(req.Value); err != nil {
		return api.Secret{}, err
	}
	r, err := s.find(ctx, accountID, id)
	if err != nil {
		return api.Secret{}, err
	}
	if req.AllowedHosts != nil {
		if r.AllowedHosts, err = s.checkHosts(ctx, req.AllowedHosts); err != nil {
			return api.Secret{}, err
		}
	}
	r.UpdatedAt = s.stamp()
	if err := s.keys.seal(r, []byte(req.Value)); err != nil {
		return api.Secret{}, fmt.Errorf("seal secret: %w", err)
	}
	if err := s.store.UpdateSecret(ctx, r); errors.Is(err, ErrNotFound) {
		return api.Secret{}, notFound(id)
	} else if err != nil {
		return api.Secret{}, fmt.Errorf("update secret: %w", err)
	}
	return r.ToAPI(), nil
}

// Delete removes a secret (by id, or by name). Sandboxes granted it can
// no longer use it.
func (s *Service) Delete(ctx context.Context, accountID, id string) error {
	if err := s.ready(); err != nil {
		return err
	}
	r, err := s.find(ctx, accountID, id)
	if err != nil {
		return err
	}
	if err := s.store.DeleteSecret(ctx, accountID, r.ID); errors.Is(err, ErrNotFound) {
		return notFound(id)
	} else if err != nil {
		return fmt.Errorf("delete secret: %w", err)
	}
	return nil
}

// CheckNames verifies a sandbox create's secret_names: each must be one of
// the account's secrets (404 secret_not_found), before any sandbox exists.
func (s *Service) CheckNames(ctx context.Context, accountID string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if err := s.ready(); err != nil {
		return err
	}
	rs, err := s.store.Secrets(ctx, accountID)
	if err != nil {
		return fmt.Errorf("list secrets: %w", err)
	}
	for _, n := range names {
		if !slices.ContainsFunc(rs, func(r *Record) bool { return r.Name == n }) {
			return api.Errorf(http.StatusNotFound, api.CodeSecretNotFound, "secret %q not found", n).
				WithHint("create it with `boxkite secrets set " + n + " --allowed-host HOST`, or list them with `boxkite secrets ls`")
		}
	}
	return nil
}

// Grant records the names a sandbox was created with.
func (s *Service) Grant(ctx context.Context, sandboxID string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if err := s.ready(); err != nil {
		return err
	}
	return s.store.GrantSecrets(ctx, sandboxID, dedupe(names))
}

// Granted returns the secrets granted to a sandbox that still exist, each
// by the id of the secret granted (what its forks and snapshots keep).
func (s *Service) Granted(ctx context.Context, sandboxID string) ([]model.SecretGrant, error) {
	if s == nil {
		return nil, nil // no secrets service: none was granted
	}
	gs, err := s.store.SandboxSecretGrants(ctx, sandboxID)
	if err != nil {
		return nil, fmt.Errorf("read secret grants: %w", err)
	}
	return gs, nil
}

// Inherit grants a fork or a restore the secrets its parent held (Granted):
// the same secrets by id, so one deleted since is not granted, nor one
// created again under its name, nor one of another account.
func (s *Service) Inherit(ctx context.Context, sandboxID string, grants []model.SecretGrant) error {
	if s == nil || len(grants) == 0 {
		return nil // without a secrets service none is resolvable anyway
	}
	return s.store.InheritSecrets(ctx, sandboxID, grants)
}

func dedupe(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}

// Rotate wraps every data key not wrapped by the primary key with it. It
// returns how many it rewrapped, and how many it could not because the
// keyring lacks their key (they stay unusable until that key is back in
// the file, or they are deleted). Run at start-up: once it returned with
// none left over, the older keys may leave the key file.
func (s *Service) Rotate(ctx context.Context) (rewrapped, unknown int, err error) {
	if s == nil {
		return 0, 0, nil
	}
	rs, err := s.store.AllSecrets(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("list secrets: %w", err)
	}
	for _, r := range rs {
		old := r.KeyID
		changed, err := s.keys.rewrap(r)
		if errors.Is(err, errUnknownKey) {
			unknown++
			continue
		}
		if err != nil {
			return rewrapped, unknown, err
		}
		if !changed {
			continue
		}
		err = s.store.RewrapSecret(ctx, r.ID, old, r.KeyID, r.WrappedKey)
		if errors.Is(err, ErrChanged) || errors.Is(err, ErrNotFound) {
			continue // written or deleted meanwhile, by this server's API or another's
		}
		if err != nil {
			return rewrapped, unknown, fmt.Errorf("rewrap secret %s: %w", r.ID, err)
		}
		rewrapped++
	}
	return rewrapped, unknown, nil
}

// envNameRE is an environment variable's name, and envDenied the names
// secret_env never sets (reference §2.3): they change how programs start.
var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envDenied = []string{
		"PATH", "IFS", "ENV", "BASH_ENV", "BASH_FUNC", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
		"DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "DYLD_FRAMEWORK_PATH", "PYTHONSTARTUP", "PYTHONPATH",
		"PERL5OPT", "NODE_OPTIONS", "NODE_PATH",
	}
)

// EnvValues resolves an exec's secret_env (variable → secret name) for
// the account's sandbox: each name a valid, allowed variable, each secret
// granted to the sandbox. It returns variable → value, and secret name →
// value for redaction.
func (s *Service) EnvValues(ctx context.Context, accountID, sandboxID string, env map[string]string) (vars, values map[string]string, err error) {
	if err := s.ready(); err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(env))
	for k, n := range env {
		if !envNameRE.MatchString(k) || slices.ContainsFunc(envDenied, func(d string) bool { return strings.EqualFold(d, k) }) {
			return nil, nil, api.Invalid("secret_env", fmt.Sprintf("secret_env may not set %q", k),
				"name a variable of letters, digits and _, not one that changes how programs start (PATH, LD_PRELOAD, …)")
		}
		names = append(names, n)
	}
	used, _, err := s.secretsFor(ctx, accountID, sandboxID, dedupe(names))
	if err != nil {
		return nil, nil, err
	}
	values = map[string]string{}
	for _, r := range used {
		v, err := s.keys.open(r)
		if err != nil {
			return nil, nil, fmt.Errorf("open secret for secret_env: %w", err)
		}
		values[r.Name] = string(v)
	}
	vars = map[string]string{}
	for k, n := range env {
		vars[k] = values[n]
	}
	if err := s.store.TouchSecrets(context.WithoutCancel(ctx), accountID, dedupe(names), s.now()); err != nil {
		s.log.WarnContext(ctx, "record secret use", "err", err)
	}
	return vars, values, nil
}
