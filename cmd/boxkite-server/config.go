package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/local"
)

// envPrefix names every flag's environment twin: --state-dir ↔ BOXKITE_SERVER_STATE_DIR.
const envPrefix = "BOXKITE_SERVER_"

// bootstrapKeyEnv carries the local-mode admin key. It is read from the
// environment only, never a flag, because argv is world-readable.
const bootstrapKeyEnv = "BOXKITE_BOOTSTRAP_API_KEY"

// jwtSecretEnv carries the key that signs access tokens, for servers that
// share one (several behind a balancer, or a key kept in a secret store).
// Environment only, like the bootstrap key; unset, the server generates
// one and keeps it in the database.
const jwtSecretEnv = "BOXKITE_JWT_SECRET"

// bastionKeyEnv carries the secret boxkite-bastion presents to mint
// takeover tokens for registered SSH keys (docs/bastion.md). Environment
// only, like the others; unset, SSH-key logins through a bastion fail and
// takeover tokens as passwords still work.
const bastionKeyEnv = "BOXKITE_BASTION_KEY"

// defaultWarmPool is the warm pool's size unless configured: enough for an
// agent's next sandbox to start at once, small enough (a few MiB each) to
// go unnoticed on a laptop.
const defaultWarmPool = 2

// options is the resolved configuration of one run.
type options struct {
	listen          string
	db              string
	driver          string
	stateDir        string
	configFile      string
	sidecar         string
	logLevel        string
	defaultLifetime time.Duration
	maxLifetime     time.Duration
	maxStorageGB    float64
	maxVolumeGB     float64
	mcpCatalog      string
	recordTakeovers bool
	maxCount        int
	reaperInterval  time.Duration
	warmPool        int
	version         bool

	// The local driver's host id ranges (local.Config.IDRange*; 0 or ""
	// means the driver's default).
	idRangeDir   string
	idRangeFirst int
	idRangeCount int

	// The kube driver (--driver kube).
	kubeconfig   string
	namespace    string
	image        string
	runtimeClass string
	egressHost   string

	// Fair use and rate limits (server.Limits, server.RateLimits).
	maxConcurrent           int
	maxConcurrentPerAccount int
	monthlySandboxHours     float64
	maxSize                 string
	rateLifecycle           int
	rateOps                 int
	rateAuth                int
	jwtSecret               string // from jwtSecretEnv only
	bastionKey              string // from bastionKeyEnv only
}

func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// defaultStateDir is $BOXKITE_HOME/server, else ~/.boxkite/server.
func defaultStateDir(getenv func(string) string) string {
	home := getenv("BOXKITE_HOME")
	if home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(h, ".boxkite")
		} else {
			home = ".boxkite"
		}
	}
	return filepath.Join(home, "server")
}

func newFlagSet(o *options, getenv func(string) string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("boxkite-server", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.listen, "listen", server.DefaultListen, "`address` to serve the API on")
	fs.StringVar(&o.db, "db", "", "database: sqlite:PATH or postgres://user:pass@host/db (`dsn`; default sqlite:<state-dir>/boxkite.db)")
	fs.StringVar(&o.driver, "driver", "local", "sandbox `driver`: local (Linux namespaces) or kube (a pod per sandbox)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kube driver: kubeconfig `file` (default: the in-cluster service account)")
	fs.StringVar(&o.namespace, "namespace", kube.DefaultNamespace, "kube driver: `namespace` the sandbox pods run in")
	fs.StringVar(&o.image, "sandbox-image", kube.DefaultImage, "kube driver: sandbox `image`, with boxkite-sidecar on its PATH")
	fs.StringVar(&o.runtimeClass, "runtime-class", "", "kube driver: runtimeClassName of sandbox pods, e.g. gvisor (`name`; default the cluster's)")
	fs.StringVar(&o.egressHost, "egress-host", "", "kube driver: `address` sandbox pods reach this server on for granted egress, e.g. the pod IP (default: egress grants refused)")
	fs.StringVar(&o.stateDir, "state-dir", defaultStateDir(getenv), "`directory` for the database and sandbox state")
	fs.StringVar(&o.configFile, "config", "", "TOML `file` with any of these settings (keys as the flag names)")
	fs.StringVar(&o.sidecar, "sidecar", "", "boxkite-sidecar `binary` (default: next to boxkite-server, then $PATH)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.DurationVar(&o.defaultLifetime, "default-lifetime", server.DefaultLifetime, "sandbox lifetime when a create asks for none")
	fs.DurationVar(&o.maxLifetime, "max-lifetime", server.DefaultMaxLifetime, "longest sandbox lifetime a create or extend may ask for")
	fs.Float64Var(&o.maxStorageGB, "max-storage-gb", server.DefaultMaxStorageGB, "largest storage_gb a create may ask for")
	fs.IntVar(&o.maxCount, "max-count", server.DefaultMaxCount, "most sandboxes one create may ask for")
	fs.Float64Var(&o.maxVolumeGB, "max-volume-gb", server.DefaultMaxVolumeGB, "largest size_gb a volume may ask for")
	fs.StringVar(&o.mcpCatalog, "mcp-catalog", "", "MCP connection catalog as comma-separated `id=host[:port]` entries, replacing the default (github, slack, notion, linear)")
	fs.BoolVar(&o.recordTakeovers, "takeover-recording", false, "keep an asciicast recording of every terminal takeover, readable after the sandbox is gone")
	fs.DurationVar(&o.reaperInterval, "reaper-interval", server.DefaultReaperInterval, "how often expired sandboxes are destroyed")
	fs.IntVar(&o.maxConcurrent, "max-concurrent", 0, "most sandboxes running at once, all accounts together (0: no limit)")
	fs.IntVar(&o.maxConcurrentPerAccount, "max-concurrent-per-account", 0, "most sandboxes one account may run at once (0: no limit)")
	fs.Float64Var(&o.monthlySandboxHours, "monthly-sandbox-hours", 0, "sandbox-hours one account may use per calendar month, UTC (0: no limit)")
	fs.StringVar(&o.maxSize, "max-size", "", "largest `size` a create may ask for: small, medium or large (default any)")
	fs.IntVar(&o.rateLifecycle, "rate-lifecycle", 0, "sandbox creates, deletes and extends per account per minute (0: 20, or 1000 in local mode; -1: no limit)")
	fs.IntVar(&o.rateOps, "rate-ops", 0, "exec and sandbox tool calls per account per minute (0: 120, or 10000 in local mode; -1: no limit)")
	fs.IntVar(&o.rateAuth, "rate-auth", 0, "signups and logins per client IP, and logins per email, per minute (0: 10, or 100 in local mode; -1: no limit)")
	fs.IntVar(&o.warmPool, "warm-pool", defaultWarmPool, "sandboxes of the default size kept started ahead of need, so creates are fast (0: none)")
	fs.StringVar(&o.idRangeDir, "id-range-dir", "", "local driver as root: `directory` of the host id range leases, shared by every boxkite server of the host (default "+local.DefaultIDRangeDir+")")
	fs.IntVar(&o.idRangeFirst, "id-range-first", 0, fmt.Sprintf("local driver as root: first host uid and gid of the sandboxes' id ranges, a multiple of 65536 (0: %d)", local.DefaultIDRangeFirst))
	fs.IntVar(&o.idRangeCount, "id-range-count", 0, fmt.Sprintf("local driver as root: how many 65536-id ranges sandboxes and builds lease, at most one each (0: %d)", local.DefaultIDRangeCount))
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "version" {
			f.Usage += " [env " + envName(f.Name) + "]"
		}
	})
	fs.Usage = func() {
		fmt.Fprintf(out, `Usage: boxkite-server [flags]

boxkite-server is the boxkite control plane: the REST API, the reaper and the
reverse proxy to each sandbox's sidecar. 'boxkite up' starts it for local mode.

Settings come from flags, then environment variables, then the --config file,
then the defaults shown. %s (environment only) registers a
local admin API key at start-up; %s (environment only, at least
32 bytes) signs access tokens, else a generated key kept in the database does;
%s (environment only, at least 32 bytes) is the secret boxkite-bastion
presents to open terminals for registered SSH keys.

Flags:
`, bootstrapKeyEnv, jwtSecretEnv, bastionKeyEnv)
		fs.PrintDefaults()
	}
	return fs
}

// parseOptions resolves the settings: flags > env > config file > defaults.
func parseOptions(args []string, getenv func(string) string, out io.Writer) (*options, error) {
	o := &options{}
	fs := newFlagSet(o, getenv, out)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	// The config file's location itself may come from the environment.
	if !set["config"] {
		if v := getenv(envName("config")); v != "" {
			o.configFile = v
			set["config"] = true
		}
	}
	file := map[string]string{}
	if o.configFile != "" {
		var err error
		if file, err = readConfigFile(o.configFile, fs); err != nil {
			return nil, err
		}
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" || f.Name == "version" {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, usageErrorf("%s=%q: %v", envName(f.Name), v, err))
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, usageErrorf("%s: %s = %q: %v", o.configFile, f.Name, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o.jwtSecret = getenv(jwtSecretEnv)
	o.bastionKey = getenv(bastionKeyEnv)
	if o.db == "" {
		o.db = "sqlite:" + filepath.Join(o.stateDir, "boxkite.db")
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, usageErrorf("log level %q: want debug, info, warn or error", o.logLevel)
	}
	switch o.maxSize {
	case "", "small", "medium", "large":
	default:
		return nil, usageErrorf("max size %q: want small, medium or large", o.maxSize)
	}
	switch o.driver {
	case "local", "kube":
	default:
		return nil, usageErrorf("driver %q: want local or kube", o.driver)
	}
	if o.warmPool < 0 {
		return nil, usageErrorf("warm pool %d: must not be negative (0 means none)", o.warmPool)
	}
	if o.idRangeFirst < 0 || o.idRangeCount < 0 {
		return nil, usageErrorf("id ranges: first %d and count %d must not be negative (0 means the default)", o.idRangeFirst, o.idRangeCount)
	}
	if o.maxConcurrent < 0 || o.maxConcurrentPerAccount < 0 || o.monthlySandboxHours < 0 {
		return nil, usageErrorf("fair-use limits must not be negative (0 means no limit)")
	}
	return o, nil
}

// readConfigFile reads a TOML file of flag settings. Keys are flag names,
// with - or _; unknown keys are an error so that typos do not pass silently.
func readConfigFile(path string, fs *flag.FlagSet) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parse config file %s: %w", path, err)
	}
	out := map[string]string{}
	for k, v := range raw {
		name := strings.ReplaceAll(k, "_", "-")
		if fs.Lookup(name) == nil || name == "config" || name == "version" {
			return nil, usageErrorf("%s: unknown setting %q", path, k)
		}
		switch v.(type) {
		case string, int64, float64, bool:
			out[name] = fmt.Sprint(v)
		default:
			return nil, usageErrorf("%s: setting %q must be a string, number or boolean", path, k)
		}
	}
	return out, nil
}

// usageError is a mistake in flags, environment or config file: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}
