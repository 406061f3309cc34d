// Package server is the boxkite control plane: accounts, API keys, sandboxes
// and their lifetimes, the HTTP API of design/API.md, and the reverse proxy to
// each sandbox's sidecar. Storage (Store) and substrates (Driver) are
// interfaces implemented by server/sqlstore, server/local and server/kube and
// wired together in cmd/boxkite-server.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/accounts"
	"github.com/boxkite/boxkite/server/admin"
	"github.com/boxkite/boxkite/server/allowlists"
	"github.com/boxkite/boxkite/server/auditlog"
	"github.com/boxkite/boxkite/server/demo"
	"github.com/boxkite/boxkite/server/e2bport"
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

// Server is the control plane. It is an http.Handler; Init prepares the
// store, Run does the background work, Serve combines them with a listener.
type Server struct {
	cfg    Config
	store  model.Store
	driver model.Driver
	log    *slog.Logger
	mux    *http.ServeMux
	now    func() time.Time
	// afterFunc runs f after d; it returns f's stop (time.AfterFunc,
	// but for tests that move the server's clock).
	afterFunc func(d time.Duration, f func()) (stop func() bool)
	sidecars  *sidecar.Clients
	touches   *keyToucher
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
	// held bounds the memory the answers held whole take (JSON execs,
	// interpreter runs, process output pages; exec.HeldBudget).
	held *exec.HeldBudget

	jwt     jwtKeys
	hasher  *authn.Hasher
	limiter *limits.RateLimiter
	// registered are the registered routes (register), their docs left
	// out; streamingPOST the POST patterns exempt from Idempotency-Key.
	registered    []httpx.Route
	streamingPOST map[string]bool
	lastPurge     time.Time // of idempotency records; only Run touches it
	// instance is this server's id among those sharing the store: the
	// owner of its lifecycle leases and pending snapshots, and its
	// heartbeat's (instances.go).
	instance string
	// token is the fencing token of this server's heartbeat lease, as the
	// store last gave it (instances.go); 0 before the first beat and for
	// a sole server.
	token atomic.Int64
	// healthTimeout bounds the whole start-up sweep of sidecar health checks.
	healthTimeout time.Duration
	// shutdownTimeout is how long Serve waits for requests in flight.
	shutdownTimeout time.Duration
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
		store:           authz.Wrap(store),
		driver:          driver,
		log:             slog.New(httpx.LogHandler{Handler: log.Handler()}),
		mux:             http.NewServeMux(),
		now:             time.Now,
		afterFunc:       func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
		sidecars:        sidecar.NewClients(),
		touches:         newKeyToucher(),
		allowlists:      allowlist.NewCache(),
		watchKeepAlive:  auditlog.DefaultKeepAlive,
		scrubIdle:       scrub.DefaultIdleFlush,
		revocations:     newRevocations(),
		held:            exec.NewHeldBudget(cfg.HeldOutputBytes, cfg.HeldOutputAccountBytes),
		hasher:          authn.NewHasher(),
		limiter:         limits.NewRateLimiter(),
		streamingPOST:   map[string]bool{}, // filled by mount
		healthTimeout:   2 * time.Second,
		shutdownTimeout: defaultShutdownTimeout,
		instance:        model.NewID(),
	}
	if cfg.ClockForTests != nil {
		s.now = cfg.ClockForTests
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
			AfterTeardownForTests: s.cfg.AfterTeardownForTests, LockWaitForTests: s.cfg.LockWaitForTests,
			PublicURL: s.cfg.PublicURL, SoleServer: s.soleServer(), Instance: s.instance,
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

// soleServer reports whether no other server can share the store: a
// SQLite database, which one server holds alone (its owner lock). A store
// that does not say is taken as shared.
func (s *Server) soleServer() bool {
	var st any = s.store
	if w, ok := st.(interface{ Unwrap() model.Store }); ok {
		st = w.Unwrap()
	}
	sh, ok := st.(interface{ Shared() bool })
	return ok && !sh.Shared()
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
			s.register(rt)
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

	s.mount(s.images.Routes())    // server/imagesapi: 422 without images
	s.mount(s.sandboxes.Routes()) // server/sandbox: create, list, get, delete, extend, pause, resume, stats
	s.mount(s.snap.Routes())      // server/snapshot
	s.mount(s.exec.Routes())      // server/exec
	s.mount(s.proxy.Routes())     // server/proxy: files, processes, interpreter, lsp
	s.mount(s.takeover.Routes())  // server/takeover
	s.mount(s.auditlog.Routes())  // server/auditlog: log and watch

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
	if err := s.start(ctx); err != nil { // the heartbeat, before Reconcile: instances.go
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
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		s.heartbeats(ctx) // instances.go
	}()
	defer func() { <-beatDone }()
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
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout)
		if serr := hs.Shutdown(sctx); serr != nil {
			// Long exec streams outlive the grace period; cut them.
			_ = hs.Close()
		}
		cancel()
		err = <-serveErr
	}
	stopRun()
	<-runDone
	s.endInstance(context.WithoutCancel(ctx))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
