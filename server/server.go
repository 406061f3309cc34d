// Package server is the boxkite control plane: accounts, API keys, sandboxes
// and their lifetimes, the HTTP API of design/API.md, and the reverse proxy to
// each sandbox's sidecar. Storage (Store) and substrates (Driver) are
// interfaces implemented by server/sqlstore, server/local and server/kube and
// wired together in cmd/boxkite-server.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/accounts"
	"github.com/boxkite/boxkite/server/admin"
	"github.com/boxkite/boxkite/server/allowlists"
	"github.com/boxkite/boxkite/server/auditlog"
	"github.com/boxkite/boxkite/server/demo"
	"github.com/boxkite/boxkite/server/e2bport"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/exec"
	"github.com/boxkite/boxkite/server/hostedmcp"
	"github.com/boxkite/boxkite/server/imagesapi"
	"github.com/boxkite/boxkite/server/internal/allowlist"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authn"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/internal/metrics"
	"github.com/boxkite/boxkite/server/internal/scrub"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/mcpconns"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/oauth"
	"github.com/boxkite/boxkite/server/orgs"
	"github.com/boxkite/boxkite/server/preview"
	"github.com/boxkite/boxkite/server/proxy"
	"github.com/boxkite/boxkite/server/sandbox"
	"github.com/boxkite/boxkite/server/secrets"
	"github.com/boxkite/boxkite/server/snapshot"
	"github.com/boxkite/boxkite/server/status"
	"github.com/boxkite/boxkite/server/storagesync"
	"github.com/boxkite/boxkite/server/takeover"
	"github.com/boxkite/boxkite/server/volumes"
	"github.com/boxkite/boxkite/server/webhooks"
)

// Config holds a control plane's settings. Zero fields take the defaults
// below (see WithDefaults).
type Config struct {
	Listen          string        // address cmd/boxkite-server listens on; default 127.0.0.1:8090
	Version         string        // reported by /health
	DriverName      string        // recorded on each sandbox, e.g. "local"
	DefaultLifetime time.Duration // lifetime when a create asks for none; default 30m
	MaxLifetime     time.Duration // ceiling for create and extend; default 24h
	MaxStorageGB    float64       // ceiling for storage_gb; default 20
	MaxVolumeGB     float64       // ceiling for a volume's size_gb; 0 means DefaultMaxVolumeGB
	MaxCount        int           // ceiling for count in one create (and one fork); default 10
	// MaxPausedAge is how long a sandbox may stay paused before the
	// reaper destroys it; 0 means DefaultMaxPausedAge, negative forever.
	MaxPausedAge time.Duration
	// SnapshotLimit is how many snapshots an account may keep; 0 means
	// api.DefaultSnapshotLimit, negative no limit.
	SnapshotLimit int
	// PausedLimit is how many paused sandboxes an account may keep; 0
	// means DefaultPausedLimit, negative no limit.
	PausedLimit    int
	ReaperInterval time.Duration // how often expired sandboxes are destroyed; default 1s
	// BootstrapAPIKey, when set, is registered as an admin key of the
	// BootstrapEmail account at Init (local mode). Idempotent across restarts.
	BootstrapAPIKey string
	BootstrapEmail  string // default "local@localhost"

	Limits     Limits     // fair use of sandbox creation (server/sandbox); zero fields mean none
	RateLimits RateLimits // requests per minute (ratelimit.go); generous in local mode
	// JWTSecret signs access tokens (at least 32 bytes); "" means a random
	// key generated on first use and kept in the store.
	JWTSecret      string
	AccessTokenTTL time.Duration // default 30m
	// Images keeps sandbox images (server/images); nil means image_id and
	// /v1/images are not supported.
	Images imagesapi.Store
	// MCPCatalog maps an MCP catalog id to the host[:port] a connection
	// grants egress to; nil means DefaultMCPCatalog().
	MCPCatalog map[string]string
	// EgressResolver resolves names for the egress proxy; nil means the
	// system resolver. EgressPermitForTests, when set, exempts addresses
	// from the proxy's forbidden ranges: tests only (loopback servers).
	EgressResolver       egress.Resolver
	EgressPermitForTests func(netip.Addr) bool
	// BastionKey is the shared secret boxkite-bastion presents to mint
	// takeover tokens for registered SSH keys (POST /v1/bastion/…);
	// "" closes those routes. See docs/bastion.md.
	BastionKey string
	// TakeoverFlushInterval is how often a takeover's typed bytes are
	// written to the audit log while it lasts; default 10s.
	TakeoverFlushInterval time.Duration
	// TakeoverRecording keeps an asciicast v2 recording of every takeover
	// (GET …/takeover-recordings/{id}, also after the sandbox is gone).
	TakeoverRecording bool
	// BodyTimeouts bound how long a request body may take to arrive
	// (408 request_timeout); zero fields take apihttp's defaults.
	BodyTimeouts apihttp.BodyTimeouts
	// MaxExecOutputBytes is the largest max_output_bytes an exec may ask
	// for, per stream; default DefaultMaxExecOutput, at most
	// api.MaxExecOutput. A JSON exec result is held in memory whole.
	MaxExecOutputBytes int64
	// Secrets keeps the accounts' secrets and brokers requests with them
	// (server/secrets); nil means a server without a secrets key, whose
	// secrets routes answer 503 secrets_unavailable.
	Secrets *secrets.Service
	// PreviewBaseURL is where host-based preview URLs are served
	// (server/preview): "https://preview.example.com" makes
	// https://<port>-<id>.preview.example.com; "" means *.localhost on
	// the port the request came to (local mode).
	PreviewBaseURL string
	// SecretEnv allows exec's secret_env: a secret's value in one
	// command's environment, inside the sandbox (docs/secrets.md: weaker
	// than http_request). Off by default.
	SecretEnv bool
	// Webhooks configures the delivery of webhook events
	// (server/webhooks): the operator's settings, never a tenant's.
	Webhooks WebhookConfig
	// Storage configures the workspace sync to object storage
	// (storagesync_port.go); off when its Backend is nil.
	Storage StorageConfig
	// MCPOAuth runs the OAuth 2.1 authorization server of /mcp/
	// (server/oauth, docs/oauth.md): MCP clients connect with OAuth
	// instead of a pasted API key. Off by default.
	MCPOAuth bool
	// DemoPlayground serves the demo playground (/v1/demo/*, server/demo):
	// sandboxes without a key, 4 minutes each, 3 at once. Off by default.
	DemoPlayground bool
	// Operators are the emails of the accounts holding the operator role
	// (/v1/admin/*, server/admin): the server's configuration, never the
	// API's. Each must have an account when the server starts.
	Operators []string
	// PublicURL is the server's public base URL
	// ("https://boxkite.example.com"), the OAuth issuer and the base of
	// the /mcp/ resource; "" derives it from each request's Host.
	PublicURL string
}

// WebhookConfig is the operator's configuration of webhook deliveries.
type WebhookConfig struct {
	// AllowLoopback lets subscriptions reach 127.0.0.1 (tests and local
	// receivers); every other loopback, private or link-local address
	// stays refused.
	AllowLoopback bool
	// BackoffBase is the first retry's delay (default 30 s); the n-th
	// waits BackoffBase × 2^(n-1), at most an hour.
	BackoffBase time.Duration
	// Poll is how often due deliveries are looked for (default 5 s).
	Poll time.Duration
}

// Defaults of Config.
const (
	DefaultListen          = "127.0.0.1:8090"
	DefaultLifetime        = 30 * time.Minute
	DefaultMaxLifetime     = 24 * time.Hour
	DefaultMaxStorageGB    = 20
	DefaultMaxCount        = 10
	DefaultReaperInterval  = time.Second
	DefaultMaxPausedAge    = 7 * 24 * time.Hour
	DefaultPausedLimit     = 10
	DefaultBootstrapEmail  = "local@localhost"
	DefaultTakeoverFlush   = 10 * time.Second
	DefaultMaxExecOutput   = 16 << 20
	minBastionKeyLen       = 32
	defaultShutdownTimeout = 5 * time.Second
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.Listen = cmp.Or(c.Listen, DefaultListen)
	c.Version = cmp.Or(c.Version, "dev")
	c.DefaultLifetime = cmp.Or(c.DefaultLifetime, DefaultLifetime)
	c.MaxLifetime = cmp.Or(c.MaxLifetime, DefaultMaxLifetime)
	c.MaxStorageGB = cmp.Or(c.MaxStorageGB, DefaultMaxStorageGB)
	c.MaxCount = cmp.Or(c.MaxCount, DefaultMaxCount)
	c.ReaperInterval = cmp.Or(c.ReaperInterval, DefaultReaperInterval)
	c.MaxPausedAge = cmp.Or(c.MaxPausedAge, DefaultMaxPausedAge)
	c.PausedLimit = cmp.Or(c.PausedLimit, DefaultPausedLimit)
	c.BootstrapEmail = cmp.Or(c.BootstrapEmail, DefaultBootstrapEmail)
	// A bootstrap key means local mode: one user, who is also the operator.
	c.RateLimits = c.RateLimits.withDefaults(c.BootstrapAPIKey != "")
	c.AccessTokenTTL = cmp.Or(c.AccessTokenTTL, authn.DefaultAccessTokenTTL)
	c.TakeoverFlushInterval = cmp.Or(c.TakeoverFlushInterval, DefaultTakeoverFlush)
	c.MaxExecOutputBytes = cmp.Or(c.MaxExecOutputBytes, DefaultMaxExecOutput)
	return c
}

func (c Config) validate() error {
	switch {
	case c.DefaultLifetime < time.Minute || c.MaxLifetime < time.Minute:
		return errors.New("lifetimes must be at least one minute")
	case c.DefaultLifetime > c.MaxLifetime:
		return fmt.Errorf("default lifetime %v exceeds the maximum %v", c.DefaultLifetime, c.MaxLifetime)
	case c.MaxStorageGB < 0:
		return errors.New("max storage must not be negative")
	case c.MaxCount < 1:
		return errors.New("max count must be at least 1")
	case c.ReaperInterval < 0:
		return errors.New("reaper interval must not be negative")
	case c.JWTSecret != "" && len(c.JWTSecret) < authn.MinJWTSecretLen:
		return fmt.Errorf("the JWT secret must be at least %d bytes", authn.MinJWTSecretLen)
	case c.BastionKey != "" && len(c.BastionKey) < minBastionKeyLen:
		return fmt.Errorf("the bastion key must be at least %d bytes", minBastionKeyLen)
	case c.TakeoverFlushInterval < 0:
		return errors.New("the takeover flush interval must not be negative")
	case c.MaxExecOutputBytes < api.DefaultExecOutput || c.MaxExecOutputBytes > api.MaxExecOutput:
		return fmt.Errorf("the exec output maximum must be between %d and %d bytes", api.DefaultExecOutput, api.MaxExecOutput)
	case c.AccessTokenTTL < time.Minute:
		return errors.New("the access token lifetime must be at least one minute")
	}
	return c.Limits.Validate()
}

// Limits are the fair-use limits of sandbox creation (server/sandbox).
type Limits = sandbox.Limits

// DefaultMaxVolumeGB caps size_gb of a volume when Config.MaxVolumeGB is 0.
const DefaultMaxVolumeGB = 100

// Server is the control plane. It is an http.Handler; Init prepares the
// store, Run does the background work, Serve combines them with a listener.
type Server struct {
	cfg      Config
	store    model.Store
	driver   model.Driver
	log      *slog.Logger
	mux      *http.ServeMux
	now      func() time.Time
	sidecars *sidecar.Clients
	touches  *keyToucher
	// alog writes the audit log and pushes new entries to watchers;
	// allowlists caches compiled command allowlists; metrics backs /metrics.
	alog           *audit.Log
	calls          sidecar.Calls // calls in flight to sidecars, ended when a sandbox freezes, pauses or goes
	allowlists     *allowlist.Cache
	metrics        *metrics.Metrics
	watchKeepAlive time.Duration
	// scrubIdle is how long a scrubbed output stream holds back the end
	// of its text while nothing new comes (scrub_stream.go).
	scrubIdle time.Duration
	// revocations ends requests whose credential is revoked (revoke.go).
	revocations *revocations

	jwt     jwtKeys
	hasher  *authn.Hasher
	limiter *limits.RateLimiter
	// registered are the registered routes (register), their docs left
	// out; streamingPOST the POST patterns exempt from Idempotency-Key.
	registered    []httpx.Route
	streamingPOST map[string]bool
	lastPurge     time.Time // of idempotency records; only Run touches it
	// healthTimeout bounds the whole start-up sweep of sidecar health checks.
	healthTimeout time.Duration
	// e2b serves what e2bMatch selects: the E2B facade (e2b_port.go).
	e2b      http.Handler
	e2bMatch func(*http.Request) bool
	// preview serves preview URLs (preview_routes.go); nil when the
	// store keeps none.
	preview *preview.Service
	// webhooks serves subscriptions and sends events (webhooks_port.go);
	// nil when the store keeps no webhooks.
	webhooks *webhooks.Service
	// storageSync syncs workspaces to object storage; nil when none is
	// configured.
	storageSync *storagesync.Service
	// orgs serves organizations (orgs_port.go); nil when the store keeps none.
	orgs *orgs.Service
	// console serves /ui/ (MountConsole).
	console http.Handler

	// The subsystems, each serving its own routes (mount).
	sandboxes *sandbox.Service // the lifecycle hub
	accounts  *accounts.Service
	volumes   *volumes.Service
	mcpconns  *mcpconns.Service
	takeover  *takeover.Service
	status    *status.Service
	images    *imagesapi.Service
	exec      *exec.Service
	allowlist *allowlists.Service
	auditlog  *auditlog.Service
	proxy     *proxy.Service
	// hostedMCP serves /mcp/ by calling this server in-process.
	hostedMCP *hostedmcp.Service
	oauth     *oauth.Service // nil unless Config.MCPOAuth (oauth_port.go)
	admin     *admin.Service // nil when the store keeps no admin access log (admin_port.go)
	ops       operators
	demo      *demo.Service // nil unless Config.DemoPlayground (demo_port.go)
	// docs are the mounted routes' docs, for /openapi.json (openapi.go).
	docs    []httpx.RouteDoc
	openAPI func() ([]byte, error)
	// snap serves snapshots and forks (server/snapshot, snapshot_port.go).
	snap *snapshot.Service
	// e2bPort is what the E2B facade calls (server/e2bport, e2b_port.go).
	e2bPort e2bport.Port
}

// New returns a Server using store and driver. log nil means slog.Default().
func New(cfg Config, store model.Store, driver model.Driver, log *slog.Logger) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	if store == nil || driver == nil {
		return nil, errors.New("server: a store and a driver are required")
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Server{
		cfg: cfg,
		// Every data access goes through the authorization layer: the
		// server keeps no other handle on the store.
		store:          authz.Wrap(store),
		driver:         driver,
		log:            slog.New(httpx.LogHandler{Handler: log.Handler()}),
		mux:            http.NewServeMux(),
		now:            time.Now,
		sidecars:       sidecar.NewClients(),
		touches:        newKeyToucher(),
		allowlists:     allowlist.NewCache(),
		watchKeepAlive: auditlog.DefaultKeepAlive,
		scrubIdle:      scrub.DefaultIdleFlush,
		revocations:    newRevocations(),
		hasher:         authn.NewHasher(),
		limiter:        limits.NewRateLimiter(),
		streamingPOST:  map[string]bool{}, // filled by mount
		healthTimeout:  2 * time.Second,
	}
	s.metrics = metrics.New(func() (float64, error) {
		n, err := s.store.CountActiveSandboxes(context.Background(), "")
		return float64(n), err
	})
	s.alog = audit.New(s.store, s.log, func() time.Time { return s.now() }, s.metrics.AuditAppends, s.metrics.AuditFailures)
	s.driver = countingDriver{driver, s.metrics}
	if err := s.subsystems(); err != nil {
		return nil, err
	}
	if err := s.newWebhooks(); err != nil {
		return nil, err
	}
	if err := s.newOrgs(); err != nil {
		return nil, err
	}
	if err := s.newStorageSync(); err != nil {
		return nil, err
	}
	if err := s.newPreviews(); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	s.routes()
	s.openAPI = sync.OnceValues(s.buildOpenAPI)
	return s, nil
}

// subsystems builds the subsystem services from the server's parts. Deps
// that tests may change after New (the clock) are reached through
// closures.
func (s *Server) subsystems() error {
	var err error
	s.accounts, err = accounts.New(accounts.Deps{
		Store:            s.store,
		Log:              s.log,
		Now:              func() time.Time { return s.now() },
		Hasher:           s.hasher,
		IssueAccessToken: s.issueAccessToken,
		LoginRate: func(w http.ResponseWriter, email string) error {
			return s.countRate(w, bucketLogin, email, false)
		},
		Revoked: func(id string) { s.revocations.revoke(id, s.now()) },
	})
	if err != nil {
		return err
	}
	maxVolumeGB := s.cfg.MaxVolumeGB
	if maxVolumeGB <= 0 {
		maxVolumeGB = DefaultMaxVolumeGB
	}
	s.volumes, err = volumes.New(volumes.Deps{
		Store:          s.store,
		Driver:         s.baseDriver(), // volumes are not counted
		Log:            s.log,
		Now:            func() time.Time { return s.now() },
		MaxGB:          maxVolumeGB,
		AdmitWrite:     func(ctx context.Context, id string) error { return s.sandboxes.CapacityWrite(ctx, id) },
		Discard:        func(ctx context.Context, id string) { s.sandboxes.Discard(ctx, id) },
		CleanupTimeout: sandbox.CleanupTimeout,
	})
	if err != nil {
		return err
	}
	s.mcpconns, err = mcpconns.New(mcpconns.Deps{
		Store: s.store, Now: func() time.Time { return s.now() }, Catalog: s.mcpCatalog(),
	})
	if err != nil {
		return err
	}
	s.hostedMCP, err = hostedmcp.New(hostedmcp.Deps{Version: s.cfg.Version, Serve: s})
	if err != nil {
		return err
	}
	if err := s.newOAuth(); err != nil {
		return err
	}
	if err := s.newAdmin(); err != nil {
		return err
	}
	if err := s.newDemo(); err != nil {
		return err
	}
	s.auditlog, err = auditlog.New(auditlog.Deps{
		Store: s.store, Audit: s.alog, Log: s.log,
		LoadSandbox: func(r *http.Request) (*model.Sandbox, error) { return s.sandboxes.LoadSandbox(r) }, // built after images
		Watching:    func(d float64) { s.metrics.Watchers.Add(d) },
		KeepAlive:   func() time.Duration { return s.watchKeepAlive },
	})
	if err != nil {
		return err
	}
	s.images, err = imagesapi.New(imagesapi.Deps{
		Images: s.cfg.Images, Store: s.store, Audit: s.alog, Now: func() time.Time { return s.now() }, WriteLogPage: s.auditlog.WritePage,
	})
	if err != nil {
		return err
	}
	if err := s.newSandboxes(); err != nil {
		return err
	}
	if w, ok := s.baseDriver().(model.CallWatcher); ok {
		w.WatchCalls(s.calls.Idle) // the warm pool refills when calls pause
	}
	s.snap = s.newSnapshots()
	if err := s.newE2BPort(); err != nil {
		return err
	}
	s.allowlist, err = allowlists.New(allowlists.Deps{Store: s.store, Cache: s.allowlists, Now: func() time.Time { return s.now() }})
	if err != nil {
		return err
	}
	s.proxy, err = proxy.New(proxy.Deps{
		Audit:            s.alog,
		Log:              s.log,
		Now:              func() time.Time { return s.now() },
		Sidecars:         s.sidecars,
		Calls:            &s.calls,
		LoadActive:       s.sandboxes.LoadActive,
		FrozenAnswer:     s.sandboxes.FrozenAnswer,
		Unreachable:      s.sandboxes.Unreachable,
		CheckBodyCommand: s.allowlist.CheckBodyCommand,
		AdmitWrite:       s.sandboxes.AdmitWrite,
		BrokenDisk:       s.sandboxes.BrokenDisk,
		SyncDisk:         s.sandboxes.SyncDisk,
		ScrubsOutput:     scrubsOutput,
		ScrubIdle:        func() time.Duration { return s.scrubIdle },
	})
	if err != nil {
		return err
	}
	s.exec, err = exec.New(exec.Deps{
		Audit:          s.alog,
		Log:            s.log,
		Now:            func() time.Time { return s.now() },
		LoadActive:     s.sandboxes.LoadActive,
		Forward:        s.proxy.Forward,
		DialSidecarWS:  s.dialSidecarWS,
		AbortResponse:  s.proxy.AbortResponse,
		SyncDisk:       s.sandboxes.SyncDisk,
		Healthy:        s.sandboxes.SidecarHealthy,
		FrozenAnswer:   s.sandboxes.FrozenAnswer,
		Calls:          &s.calls,
		CheckCommand:   s.allowlist.CheckCommand,
		NewScrub:       s.newExecScrub,
		ObserveExec:    s.metrics.Exec,
		SecretEnv:      s.cfg.Secrets.ExecEnv(s.cfg.SecretEnv),
		MaxOutputBytes: s.cfg.MaxExecOutputBytes,
	})
	if err != nil {
		return err
	}
	s.status, err = status.New(status.Deps{
		Store:               s.store,
		Log:                 s.log,
		Now:                 func() time.Time { return s.now() },
		Version:             s.cfg.Version,
		DriverName:          s.cfg.DriverName,
		MonthlySandboxHours: s.cfg.Limits.MonthlySandboxHours,
		AccountConcurrent:   s.cfg.Limits.AccountConcurrent,
		AuditOpen:           s.auditOpen,
		AuditState:          s.alog.State,
		Capacity: func() (model.CapacityDriver, bool) {
			cd, ok := s.baseDriver().(model.CapacityDriver)
			return cd, ok
		},
		Metrics: func(w http.ResponseWriter, r *http.Request) { s.metrics.Handler(s.baseDriver()).ServeHTTP(w, r) },
	})
	if err != nil {
		return err
	}
	s.takeover, err = takeover.New(takeover.Deps{
		Store:           s.store,
		Audit:           s.alog,
		Log:             s.log,
		Now:             func() time.Time { return s.now() },
		LoadSandbox:     s.sandboxes.LoadSandbox,
		LoadActive:      s.sandboxes.LoadActive,
		NotActive:       sandbox.NotActive,
		DialSidecarWS:   s.dialSidecarWS,
		AuthenticateKey: s.authenticateKey,
		CredentialValid: s.credentialValid,
		JWTKey:          s.jwtKey,
		BastionKey:      s.cfg.BastionKey,
		Recording:       s.cfg.TakeoverRecording,
		FlushInterval:   s.cfg.TakeoverFlushInterval,
	})
	return err
}

// newSandboxes builds the lifecycle service (server/sandbox), which the
// other subsystems reach through functions in their Deps.
func (s *Server) newSandboxes() error {
	var err error
	s.sandboxes, err = sandbox.New(sandbox.Deps{
		Config: sandbox.Config{
			DriverName: s.cfg.DriverName, DefaultLifetime: s.cfg.DefaultLifetime, MaxLifetime: s.cfg.MaxLifetime,
			MaxStorageGB: s.cfg.MaxStorageGB, MaxCount: s.cfg.MaxCount, MaxPausedAge: s.cfg.MaxPausedAge,
			PausedLimit: s.cfg.PausedLimit, Limits: s.cfg.Limits,
			EgressResolver: s.cfg.EgressResolver, EgressPermitForTests: s.cfg.EgressPermitForTests,
		},
		Store:         s.store,
		Driver:        s.driver,
		Base:          s.baseDriver(),
		Log:           s.log,
		Now:           func() time.Time { return s.now() },
		Sidecars:      s.sidecars,
		Calls:         &s.calls,
		Audit:         s.alog,
		Emit:          s.emit,
		HealthTimeout: func() time.Duration { return s.healthTimeout },
		ImageRoot:     s.images.RootFS,
		UseImage:      s.images.Use,
		Volumes:       s.volumes,
		Grants:        s.mcpconns.Grants,
		Secrets:       s.cfg.Secrets,
		Hooks:         storageHooks{s}, // storagesync_port.go
	})
	return err
}

// mount registers a subsystem's routes behind the guard (register) and
// documents them.
func (s *Server) mount(routes []httpx.Route) { s.mountIf(true, routes) }

// mountIf registers routes when served is set; either way /openapi.json
// documents them (a server without images still publishes their API).
func (s *Server) mountIf(served bool, routes []httpx.Route) {
	for _, rt := range routes {
		if served {
			if rt.Streaming {
				s.streamingPOST[rt.Pattern] = true
			}
			s.register(rt.Pattern, rt.Cred, rt.Handler)
		}
		if rt.Auth == httpx.AuthKey {
			rt.Auth = rt.Cred.DocAuth()
		}
		s.docs = append(s.docs, rt.RouteDoc)
	}
}

// Config returns the effective configuration, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// routes is the whole API on one screen.
func (s *Server) routes() {
	s.mount(s.status.Routes()) // server/status: health, metrics, usage, host
	s.handlePublic("GET /openapi.json", s.serveOpenAPI)

	s.mountIf(s.images.Served(), s.images.Routes()) // server/imagesapi
	s.mount(s.sandboxes.Routes())                   // server/sandbox: create, list, get, delete, extend, pause, resume, stats
	s.mount(s.snap.Routes())                        // server/snapshot
	s.mount(s.exec.Routes())                        // server/exec
	s.mount(s.proxy.Routes())                       // server/proxy: files, processes, interpreter, lsp
	s.mount(s.takeover.Routes())                    // server/takeover
	s.mount(s.auditlog.Routes())                    // server/auditlog: log and watch

	s.mount(s.volumes.Routes())                     // server/volumes
	s.mount(s.mcpconns.Routes())                    // server/mcpconns
	s.mount(s.hostedMCP.Routes())                   // server/hostedmcp
	s.mountIf(s.oauth != nil, s.oauth.Routes())     // server/oauth
	s.mountIf(s.admin != nil, s.admin.Routes())     // server/admin: the operator's
	s.mountIf(s.demo != nil, s.demo.Routes())       // server/demo: the playground
	s.mount(s.cfg.Secrets.Routes(secrets.RouteDeps{ // server/secrets
		LoadSandbox: s.sandboxes.LoadSandbox, ActiveAudited: s.sandboxes.ActiveAudited, Audit: s.audit, Now: func() time.Time { return s.now() },
	}))
	s.mountIf(s.preview != nil, s.preview.Routes(preview.RouteDeps{ // server/preview
		LoadSandbox: s.sandboxes.LoadSandbox, ActiveAudited: s.sandboxes.ActiveAudited,
	}))
	s.mountIf(s.webhooks != nil, s.webhooks.Routes())                                          // server/webhooks
	s.mountIf(s.orgs != nil, s.orgs.Routes())                                                  // server/orgs
	s.mount(s.storageSync.Routes(storagesync.RouteDeps{LoadSandbox: s.sandboxes.LoadSandbox})) // server/storagesync
	s.mount(s.allowlist.Routes())                                                              // server/allowlists

	s.mount(s.accounts.Routes()) // server/accounts

	s.handlePublic("/", s.noRoute)
}

// Init prepares the store for serving: it registers the bootstrap key and
// reconciles stored sandboxes with what the driver has (see reconcile).
// Call it once before serving.
func (s *Server) Init(ctx context.Context) error {
	if err := s.bootstrap(ctx); err != nil {
		return err
	}
	if err := s.resolveOperators(ctx); err != nil { // admin_port.go
		return err
	}
	if err := s.snap.Reconcile(ctx); err != nil {
		return err
	}
	return s.sandboxes.Reconcile(ctx)
}

// Run does the background work until ctx is done: the reaper destroys
// expired sandboxes every ReaperInterval, sandboxes the driver reports gone
// are marked lost (lost.go), audit entries the store refused are retried
// (auditgate.go), sandboxes are frozen while the host's disk is full
// (frozen.go), API-key use times are written,
// and, on a store shared with other servers, their audit entries are
// passed on to this server's watchers. It returns nil when ctx is done.
func (s *Server) Run(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.ReaperInterval)
	defer tick.Stop()
	listenDone := make(chan struct{})
	go func() {
		defer close(listenDone)
		s.listenAudit(ctx)
	}()
	defer func() { <-listenDone }()
	revokeDone := make(chan struct{})
	go func() {
		defer close(revokeDone)
		s.listenRevocations(ctx)
	}()
	defer func() { <-revokeDone }()
	lostDone := make(chan struct{})
	go func() {
		defer close(lostDone)
		s.sandboxes.WatchLost(ctx)
	}()
	defer func() { <-lostDone }()
	auditDone := make(chan struct{})
	go func() {
		defer close(auditDone)
		s.alog.Retry(ctx)
	}()
	defer func() { <-auditDone }()
	storageDone := make(chan struct{})
	go func() {
		defer close(storageDone)
		s.sandboxes.WatchStorage(ctx)
	}()
	defer func() { <-storageDone }()
	if s.webhooks != nil {
		webhooksDone := make(chan struct{})
		go func() {
			defer close(webhooksDone)
			s.webhooks.Run(ctx) // deliveries
		}()
		defer func() { <-webhooksDone }()
	}
	if s.storageSync != nil {
		syncDone := make(chan struct{})
		go func() {
			defer close(syncDone)
			s.storageSync.Run(ctx) // workspace sync to object storage
		}()
		defer func() { <-syncDone }()
	}
	if s.preview != nil {
		previewDone := make(chan struct{})
		go func() {
			defer close(previewDone)
			s.preview.Run(ctx) // request counts to the audit log
		}()
		defer func() { <-previewDone }()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.sandboxes.Tick(ctx) // the reaper
			s.sweep(ctx)
		case t := <-s.touches.ch:
			if err := s.store.TouchAPIKey(ctx, t.keyID, t.at); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "record api key use", "key", t.keyID, "err", err)
			}
		}
	}
}

// Serve serves the API on ln and runs the background work until ctx is
// done, then stops accepting and waits up to 5 s for requests in flight.
// Init must have been called.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := apihttp.NewServer(s, s.log)
	// Watch streams never go idle by themselves; end them so that
	// Shutdown does not wait its whole grace period for them.
	hs.RegisterOnShutdown(s.alog.Broker.Shutdown)
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = s.Run(runCtx)
	}()
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(apihttp.Listener(ln)) }()

	var err error
	select {
	case err = <-serveErr:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultShutdownTimeout)
		if serr := hs.Shutdown(sctx); serr != nil {
			// Long exec streams outlive the grace period; cut them.
			_ = hs.Close()
		}
		cancel()
		err = <-serveErr
	}
	stopRun()
	<-runDone
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
