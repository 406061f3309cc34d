// Command boxkite-server is the boxkite control plane: the REST API for
// sandboxes, the reaper that enforces their lifetimes, and the reverse proxy
// to each sandbox's sidecar. It stores state in SQLite or Postgres and runs sandboxes
// with the local (Linux namespace) driver. `boxkite up` starts it on
// loopback; run `boxkite-server --help` for its flags and environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/console"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/images"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/secrets"
	"github.com/boxkite/boxkite/server/sqlstore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// version is set at release time with -ldflags "-X main.version=…".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "cleanup" {
		os.Exit(runCleanup(ctx, os.Args[2:], os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stderr))
}

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	opts, err := parseOptions(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && !opts.version {
		err = readSecrets(opts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		if ue, ok := errors.AsType[*usageError](err); ok {
			hint := ue.hint
			if hint == "" {
				hint = "run boxkite-server --help"
			}
			fmt.Fprintln(stderr, "hint: "+hint)
		}
		return 2
	}
	if opts.version {
		fmt.Fprintln(stderr, "boxkite-server", buildVersion())
		return 0
	}
	if err := serve(ctx, opts, stderr); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		if h := hintOf(err); h != "" {
			fmt.Fprintf(stderr, "hint: %s\n", h)
		}
		return 1
	}
	return 0
}

// hintedError carries a hint for the person reading stderr.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return e.err.Error() }
func (e *hintedError) Unwrap() error { return e.err }

func hintOf(err error) string {
	if e, ok := errors.AsType[*hintedError](err); ok {
		return e.hint
	}
	return ""
}

func serve(ctx context.Context, opts *options, stderr io.Writer) error {
	log := newLogger(opts.logLevel, stderr)
	if err := os.MkdirAll(opts.stateDir, 0o700); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	// Find what the driver needs before binding, so a missing sidecar or
	// kubeconfig is the error reported.
	sidecar, rc, err := driverNeeds(opts)
	if err != nil {
		return err
	}
	// Bind first: a taken port should fail fast, before any state is touched.
	ln, err := listen(opts.listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	var adminLn net.Listener
	if opts.adminListen != "" {
		if adminLn, err = net.Listen("tcp", opts.adminListen); err != nil {
			return fmt.Errorf("listen on --admin-listen %s: %w", opts.adminListen, err)
		}
		defer adminLn.Close()
	}

	store, err := sqlstore.Open(ctx, opts.db)
	if errors.Is(err, sqlstore.ErrInUse) {
		return &hintedError{err, "another boxkite-server is using this database (see `boxkite status`): stop it, or give this one its own --state-dir or --db; servers that share a database need Postgres"}
	}
	if err != nil {
		return &hintedError{err, "check --db; the default is sqlite:<state-dir>/boxkite.db"}
	}
	defer store.Close()

	sb, err := newSubstrate(opts, sidecar, rc, store, log)
	if err != nil {
		return err
	}
	defer sb.close()
	catalog, err := parseMCPCatalog(opts.mcpCatalog)
	if err != nil {
		return err
	}
	cfg := serverConfig(opts, ln.Addr().String(), sb, catalog)
	if cfg.Storage, err = opts.storage.config(ctx); err != nil {
		return err
	}
	if cfg.Secrets, err = openSecrets(ctx, opts.secretsKey, store, log); err != nil {
		return err
	}
	srv, err := server.New(cfg, store, sb.driver, log)
	if err != nil {
		return err
	}
	// The E2B-compatible API (docs/e2b.md) on the same listener.
	srv.MountE2B(e2b.New(srv.E2B(), store, log), e2b.Matches)
	if opts.console {
		ui, err := console.New(console.Config{API: srv, Log: log, LinkKey: srv.ConsoleLinkKey})
		if err != nil {
			return err
		}
		srv.MountConsole(ui)
	}
	if err := srv.Init(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "boxkite-server %s listening on http://%s (driver %s, db %s)\n",
		buildVersion(), ln.Addr(), opts.driver, redactDSN(opts.db))

	if opts.console {
		fmt.Fprintf(stderr, "web console at http://%s/ui/ (docs/console.md)\n", ln.Addr())
	}
	if adminLn != nil {
		fmt.Fprintf(stderr, "profiling (net/http/pprof) on http://%s/debug/pprof/\n", adminLn.Addr())
		go serveAdmin(ctx, adminLn, log)
	}
	return serveUntilStopped(ctx, srv, ln, sb, log)
}

// serveUntilStopped serves the API on ln, with the substrate's background
// work beside it, until ctx ends; then it takes the sandboxes down.
func serveUntilStopped(ctx context.Context, srv *server.Server, ln net.Listener, sb *substrate, log *slog.Logger) error {
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		sb.run(runCtx)
	}()
	serveErr := srv.Serve(ctx, ln)
	stopRun()
	<-runDone

	// Stopping (SIGTERM/SIGINT, e.g. `boxkite down`) takes the sandboxes
	// down with the server so no boxkite process is left behind. Their rows
	// stay active and become "lost" at the next start. A SIGKILL skips
	// this: the detached jails survive and the next start re-adopts them.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), api.ServerStopBound)
	defer cancel()
	if sb.stopsSandboxes {
		// What commands wrote since the last flush is still only in the
		// workspaces: store it before they go, as a destroy does.
		if obs, err := sb.driver.List(sctx); err != nil {
			log.Error("list sandboxes for the final storage flush", "err", err)
		} else {
			ids := make([]string, len(obs))
			for i, o := range obs {
				ids[i] = o.ID
			}
			srv.FinalFlush(sctx, ids)
		}
	}
	if err := sb.shutdown(sctx); err != nil {
		log.Error("stop sandboxes", "err", err)
	}
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	log.Info("stopped")
	return nil
}

// driverNeeds finds what --driver needs from the host: the sidecar binary
// for the local driver, the cluster's rest.Config for kube.
func driverNeeds(opts *options) (sidecar string, rc *rest.Config, err error) {
	if opts.driver == "kube" {
		if rc, err = kube.RestConfig(opts.kubeconfig); err != nil {
			return "", nil, &hintedError{err, "pass --kubeconfig FILE, or run boxkite-server in the cluster with a service account"}
		}
		return "", rc, nil
	}
	sidecar, err = findSidecar(opts.sidecar)
	return sidecar, nil, err
}

// serverConfig maps the flags onto server.Config; listen is the bound
// address, which the flag may not name (fd:N).
func serverConfig(opts *options, listen string, sb *substrate, catalog map[string]string) server.Config {
	cfg := server.Config{
		Listen:          listen, // fd:N names no address
		Version:         buildVersion(),
		DriverName:      opts.driver,
		DefaultLifetime: opts.defaultLifetime,
		MaxLifetime:     opts.maxLifetime,
		MaxStorageGB:    opts.maxStorageGB,
		MaxCount:        opts.maxCount,
		ReaperInterval:  opts.reaperInterval,
		BootstrapAPIKey: opts.bootstrapKey,
		Limits: server.Limits{
			GlobalConcurrent:    opts.maxConcurrent,
			AccountConcurrent:   opts.maxConcurrentPerAccount,
			MonthlySandboxHours: opts.monthlySandboxHours,
			MaxSize:             opts.maxSize,
		},
		RateLimits:            server.RateLimits{Lifecycle: opts.rateLifecycle, Ops: opts.rateOps, Auth: opts.rateAuth, Snapshot: opts.rateSnapshot},
		SnapshotLimit:         opts.snapshotLimit,
		MaxPausedAge:          opts.maxPausedAge,
		PausedLimit:           opts.pausedLimit,
		JWTSecret:             opts.jwtSecret,
		BastionKey:            opts.bastionKey,
		TakeoverRecording:     opts.recordTakeovers,
		TakeoverFlushInterval: opts.takeoverFlush,
		Images:                sb.images,

		MaxVolumeGB: opts.maxVolumeGB,
		MCPCatalog:  catalog,

		PreviewBaseURL: opts.previewBaseURL,
		SecretEnv:      opts.allowSecretEnv,
		Webhooks:       server.WebhookConfig{AllowLoopback: opts.webhookLoopback},
		MCPOAuth:       opts.mcpOAuth,
		DemoPlayground: opts.demoPlayground,
		Operators:      opts.operators,
		PublicURL:      opts.publicURL,

		HeldOutputBytes:        opts.heldOutputMiB << 20,
		HeldOutputAccountBytes: opts.heldOutputAcctMiB << 20,
	}
	if sb.images == nil {
		cfg.Images = nil // a nil *images.Manager in the interface would look set
	}
	return cfg
}

// substrate is the driver of --driver and what comes with it.
type substrate struct {
	driver   model.Driver
	images   *images.Manager                 // nil: the driver has no host images
	run      func(ctx context.Context)       // background work (the kube warm pool)
	shutdown func(ctx context.Context) error // at SIGTERM
	close    func()
	// stopsSandboxes: shutdown takes the sandboxes down (the local
	// driver), so their workspaces get the final storage flush first.
	stopsSandboxes bool
}

// newSubstrate builds the driver opts.driver names.
// sidecar is the local driver's sidecar binary; rc the kube driver's
// client configuration.
func newSubstrate(opts *options, sidecar string, rc *rest.Config, store *sqlstore.Store, log *slog.Logger) (*substrate, error) {
	if opts.driver == "kube" {
		pullSecrets, err := opts.imagePullSecrets()
		if err != nil {
			return nil, err
		}
		cpLabels, err := opts.controlPlaneLabels()
		if err != nil {
			return nil, err
		}
		d, err := kube.NewForConfig(rc, kube.Config{
			ImagePullSecrets: pullSecrets, ImagePullPolicy: corev1.PullPolicy(opts.pullPolicy),
			Namespace: opts.namespace, Image: opts.image, RuntimeClassName: opts.runtimeClass, HostUsers: opts.hostUsers,
			StorageClass: opts.volumeClass, PoolSize: opts.warmPool, EgressHost: opts.egressHost,
			ControlPlaneNamespace: controlPlaneNamespace(opts.kubeconfig), ControlPlaneLabels: cpLabels,
			// Replicas must share it (a ReadWriteMany volume at the state
			// directory) to restore each other's snapshots.
			SnapshotDir: filepath.Join(opts.stateDir, "snapshots"),
			Log:         log.With("driver", "kube"),
		})
		if err != nil {
			return nil, err
		}
		// Pods outlive this process on purpose: another replica, or this
		// one restarted, adopts them from their labels.
		return &substrate{
			driver: d, run: d.Run,
			shutdown: func(context.Context) error { return nil },
			close:    d.Release,
		}, nil
	}
	driver, err := local.New(local.Config{
		StateDir: opts.stateDir, SidecarPath: sidecar, Log: log.With("driver", "local"),
		WarmPool:      opts.warmPool,
		Prepared:      opts.preparedPool,
		Clones:        opts.clones,
		SidecarCopies: opts.sidecarCopies,
		Host:          hostLimits(opts),
		IDRangeDir:    opts.idRangeDir, IDRangeFirst: opts.idRangeFirst, IDRangeCount: opts.idRangeCount,
	})
	if err != nil {
		return nil, err
	}
	// Not StateDir/images: the local driver keeps its disk templates there.
	imgs, err := images.New(filepath.Join(opts.stateDir, "sandbox-images"), log.With("component", "images"),
		images.WithRecords(store), images.WithJailer(driver))
	if err != nil {
		return nil, err
	}
	return &substrate{
		driver: driver, images: imgs,
		run:            func(context.Context) {},
		shutdown:       driver.Shutdown,
		close:          func() { imgs.Close() }, // unmounts built images' roots; the next start mounts them again
		stopsSandboxes: true,
	}, nil
}

// newLogger logs text to w at level, which parseOptions validated.
func newLogger(level string, w io.Writer) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// findSidecar resolves the sidecar binary: the flag, else next to this
// executable, else $PATH.
func findSidecar(path string) (string, error) {
	const install = "install it with `CGO_ENABLED=0 go install github.com/boxkite/boxkite/cmd/boxkite-sidecar@latest` " +
		"(next to boxkite-server or on $PATH), or pass --sidecar PATH"
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", &hintedError{fmt.Errorf("sidecar binary %s: %w", path, err), install}
		}
		return filepath.Abs(p)
	}
	if exe, err := os.Executable(); err == nil {
		sibling := filepath.Join(filepath.Dir(exe), "boxkite-sidecar")
		if _, err := os.Stat(sibling); err == nil {
			return sibling, nil
		}
	}
	p, err := exec.LookPath("boxkite-sidecar")
	if err != nil {
		return "", &hintedError{errors.New("boxkite-sidecar not found next to boxkite-server or on $PATH"), install}
	}
	return filepath.Abs(p)
}

// buildVersion is the -X version if set, else the module version Go
// recorded, else "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// serviceAccountNamespace is where Kubernetes tells a pod its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// controlPlaneNamespace is the namespace this server runs in, when it
// runs in the cluster (no kubeconfig): the sandboxes' network policies
// then admit the control plane's pods from there only. Elsewhere it is ""
// and they match those pods in any namespace.
func controlPlaneNamespace(kubeconfig string) string {
	if kubeconfig != "" {
		return ""
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// redactDSN is a database DSN fit for a log line: a password in a URL
// becomes "xxxxx".
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	return u.Redacted()
}

// hostLimits are the local driver's host limits from the flags.
func hostLimits(opts *options) local.HostLimits {
	const mib = 1 << 20
	h := local.HostLimits{
		MaxThreads: opts.maxHostThreads, MaxSandboxThreads: opts.maxSandboxThreads,
		MinFreeDisk: opts.minFreeDiskMiB * mib, MinFreeMemory: opts.minFreeMemoryMiB * mib,
	}
	if opts.minFreeDiskMiB < 0 {
		h.MinFreeDisk = -1
	}
	return h
}

// openSecrets returns the secrets broker over store, keyed by the text of
// the secrets key file; nil (no secrets) without one. Data keys wrapped by
// an older key of the file are rewrapped with the newest (rotation).
func openSecrets(ctx context.Context, keyText string, store *sqlstore.Store, log *slog.Logger) (*secrets.Service, error) {
	if keyText == "" {
		return nil, nil
	}
	kr, err := secrets.ParseKeyring(keyText)
	if err != nil {
		return nil, &usageError{msg: fmt.Sprintf("--secrets-key-file: %v", err), hint: "the file holds one base64 key of 32 bytes a line, the newest first; see docs/secrets.md"}
	}
	sv := secrets.New(store, secrets.Config{Keyring: kr, Log: log.With("component", "secrets")})
	n, unknown, err := sv.Rotate(ctx)
	if err != nil {
		return nil, fmt.Errorf("rewrap secrets: %w", err)
	}
	if n > 0 {
		log.Info("rewrapped secrets with the newest secrets key", "secrets", n, "key", kr.PrimaryID())
	}
	if unknown > 0 {
		log.Warn("secrets wrapped with a key the secrets key file lacks cannot be used until it is back (or they are deleted); keep older keys in the file until no start reports this",
			"secrets", unknown)
	}
	return sv, nil
}
