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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/boxkite/boxkite/internal/secretfile"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/local"
)

// envPrefix names every flag's environment twin: --state-dir ↔ BOXKITE_SERVER_STATE_DIR.
const envPrefix = "BOXKITE_SERVER_"

// Secrets never come from the environment: a process's initial
// environment stays readable in /proc/<pid>/environ (to its user and root)
// for as long as it runs, whatever os.Unsetenv does. They come from files
// readable by the server's user only, or a descriptor its parent passed
// (internal/secretfile). These variables, which older versions read, are
// refused with a hint rather than silently ignored.
const (
	bootstrapKeyEnv = "BOXKITE_BOOTSTRAP_API_KEY"
	jwtSecretEnv    = "BOXKITE_JWT_SECRET"
	bastionKeyEnv   = "BOXKITE_BASTION_KEY"
	secretsKeyEnv   = "BOXKITE_SECRETS_KEY"
)

// secretFile is one secret the server may be given, by its file flag or
// by its name in --secrets-dir (a mounted Kubernetes Secret's keys).
type secretFile struct {
	flag   string // e.g. "bootstrap-key-file"
	name   string // file name in --secrets-dir
	oldEnv string // the refused environment variable
	what   string
}

var secretFiles = []secretFile{
	{"bootstrap-key-file", "bootstrap-api-key", bootstrapKeyEnv, "the local-mode admin API key, registered at start-up"},
	{"jwt-secret-file", "jwt-secret", jwtSecretEnv, "the key that signs access tokens (at least 32 bytes); unset, a generated key kept in the database"},
	{"bastion-key-file", "bastion-key", bastionKeyEnv, "the key boxkite-bastion presents to open terminals for registered SSH keys (at least 32 bytes)"},
	{"secrets-key-file", "secrets-key", secretsKeyEnv, "the keys that wrap the data keys of stored secrets: 32 random bytes in base64 a line, the newest first (docs/secrets.md); unset, the server keeps no secrets"},
}

// defaultWarmPool is the warm pool's size unless configured: enough for an
// agent's next sandbox to start at once, small enough (a few MiB each) to
// go unnoticed on a laptop.
const defaultWarmPool = 2

// defaultPreparedPool is how many cold creates' disks, mounts and cgroups
// are made ahead unless configured: a few MiB of sparse image each.
const defaultPreparedPool = 2

// options is the resolved configuration of one run.
type options struct {
	listen          string
	adminListen     string // net/http/pprof; "" means off (admin.go)
	db              string
	dbFile          string // holds db; read by readSecrets
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
	previewBaseURL  string
	allowSecretEnv  bool
	webhookLoopback bool
	storage         storageOpts // storage.go
	mcpOAuth        bool
	demoPlayground  bool
	operators       []string
	publicURL       string
	recordTakeovers bool
	takeoverFlush   time.Duration
	console         bool // serve the web console at /ui/
	maxCount        int
	reaperInterval  time.Duration
	warmPool        int
	preparedPool    int
	clones          string // local.Config.Clones
	sidecarCopies   string // local.Config.SidecarCopies
	snapshotLimit   int
	maxPausedAge    time.Duration
	pausedLimit     int
	version         bool

	// What the local driver's sandboxes may take of the host
	// (local.HostLimits; 0 means the driver's default).
	minFreeDiskMiB    int64
	maxHostThreads    int64
	maxSandboxThreads int64
	minFreeMemoryMiB  int64
	heldOutputMiB     int64
	heldOutputAcctMiB int64

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
	hostUsers    bool
	volumeClass  string // storageClassName of volumes' claims
	egressHost   string
	pullSecrets  string // comma-separated; see imagePullSecrets
	pullPolicy   string
	cpLabels     string // control plane pod labels, k=v,k=v; see controlPlaneLabels

	// Fair use and rate limits (server.Limits, server.RateLimits).
	maxConcurrent           int
	maxConcurrentPerAccount int
	monthlySandboxHours     float64
	maxSize                 string
	rateLifecycle           int
	rateOps                 int
	rateAuth                int
	rateSnapshot            int

	// Secrets: the files they are read from (readSecrets), then their values.
	secretsDir   string
	secretPaths  map[string]string // secretFile.flag → path
	bootstrapKey string
	jwtSecret    string
	bastionKey   string
	secretsKey   string // the secrets key file's text (server/secrets.ParseKeyring)
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
	fs.StringVar(&o.listen, "listen", server.DefaultListen, "`address` to serve the API on, or fd:N: the listening socket inherited as descriptor N (boxkite up binds the port and hands it over)")
	fs.StringVar(&o.adminListen, "admin-listen", "", "serve Go profiling (net/http/pprof) on this loopback `address`, e.g. 127.0.0.1:6060 (default off)")
	fs.StringVar(&o.db, "db", "", "database: sqlite:PATH or postgres://user:pass@host/db (`dsn`; default sqlite:<state-dir>/boxkite.db)")
	fs.StringVar(&o.dbFile, "db-file", "", "`file` (mode 0600) holding the --db DSN, for a DSN with a password")
	fs.StringVar(&o.driver, "driver", "local", "sandbox `driver`: local (Linux namespaces) or kube (a pod per sandbox)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kube driver: kubeconfig `file` (default: the in-cluster service account)")
	fs.StringVar(&o.namespace, "namespace", kube.DefaultNamespace, "kube driver: `namespace` the sandbox pods run in")
	fs.StringVar(&o.image, "sandbox-image", kube.DefaultImage, "kube driver: sandbox `image`, with boxkite-sidecar on its PATH")
	fs.StringVar(&o.runtimeClass, "runtime-class", "", "kube driver: runtimeClassName of sandbox pods, e.g. gvisor (`name`; default the cluster's)")
	fs.BoolVar(&o.hostUsers, "host-users", false, "kube driver: run sandbox pods in their node's user namespace (hostUsers: true); by default each pod gets one of its own, which needs Linux 6.3+ nodes with a runtime that supports it")
	fs.StringVar(&o.volumeClass, "volume-storage-class", "", "kube driver: storageClassName of the PersistentVolumeClaims that hold volumes (`name`; default the cluster's default class)")
	fs.StringVar(&o.egressHost, "egress-host", "", "kube driver: `address` sandbox pods reach this server on for granted egress, e.g. the pod IP (default: egress grants refused)")
	fs.StringVar(&o.pullSecrets, "image-pull-secrets", "", "kube driver: comma-separated `names` of Secrets in the sandbox namespace the kubelet pulls the sandbox image with (a private registry)")
	fs.StringVar(&o.pullPolicy, "image-pull-policy", string(corev1.PullIfNotPresent), "kube driver: imagePullPolicy of sandbox pods: `policy` Always, IfNotPresent or Never")
	fs.StringVar(&o.cpLabels, "control-plane-labels", "", "kube driver: `labels` (k=v,k=v) of this server's pods, which sandbox pods admit on the sidecar port and reach for granted egress (default app.kubernetes.io/name=boxkite-server)")
	fs.StringVar(&o.stateDir, "state-dir", defaultStateDir(getenv), "`directory` for the database and sandbox state")
	fs.StringVar(&o.configFile, "config", "", "TOML `file` with any of these settings (keys as the flag names)")
	fs.StringVar(&o.sidecar, "sidecar", "", "boxkite-sidecar `binary` (default: next to boxkite-server, then $PATH)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.DurationVar(&o.defaultLifetime, "default-lifetime", server.DefaultLifetime, "sandbox lifetime when a create asks for none")
	fs.DurationVar(&o.maxLifetime, "max-lifetime", server.DefaultMaxLifetime, "longest sandbox lifetime a create or extend may ask for")
	fs.Float64Var(&o.maxStorageGB, "max-storage-gb", server.DefaultMaxStorageGB, "largest storage_gb a create may ask for")
	fs.IntVar(&o.maxCount, "max-count", server.DefaultMaxCount, "most sandboxes one create may ask for")
	fs.Float64Var(&o.maxVolumeGB, "max-volume-gb", server.DefaultMaxVolumeGB, "largest size_gb a volume may ask for")
	fs.Func("operator", "give the account with this `email` the operator role (/v1/admin/*; repeatable); the account must exist when the server starts (docs/admin.md)", func(v string) error {
		o.operators = append(o.operators, v)
		return nil
	})
	fs.BoolVar(&o.demoPlayground, "demo-playground", false, "serve the demo playground: sandboxes without a key, 4 minutes each, 3 at once, 20 KiB of output, 3 creates a minute per address (docs/demo.md)")
	fs.BoolVar(&o.mcpOAuth, "mcp-oauth", false, "run the OAuth 2.1 authorization server of /mcp/, so MCP clients connect with OAuth instead of a pasted API key (docs/oauth.md)")
	fs.StringVar(&o.publicURL, "public-url", "", "the server's public base URL (https://boxkite.example.com), the OAuth issuer; default: from each request's Host")
	fs.BoolVar(&o.webhookLoopback, "webhook-allow-loopback", false, "let webhook subscriptions deliver to 127.0.0.1 (local receivers and tests); other loopback, private and link-local targets stay refused (docs/webhooks.md)")
	fs.BoolVar(&o.allowSecretEnv, "allow-secret-env", false, "allow exec's secret_env, which puts a secret's value in one command's environment inside the sandbox (weaker than http_request; docs/secrets.md)")
	fs.StringVar(&o.previewBaseURL, "preview-base-url", "", "`URL` (scheme://domain) under which host-based preview URLs are served, as <port>-<sandbox id>.domain; empty: *.localhost on the request's port (docs/previews.md)")
	fs.StringVar(&o.mcpCatalog, "mcp-catalog", "", "MCP connection catalog as comma-separated `id=host[:port]` entries, replacing the default (github, slack, notion, linear)")
	fs.BoolVar(&o.recordTakeovers, "takeover-recording", false, "keep an asciicast recording of every terminal takeover, readable after the sandbox is gone")
	fs.DurationVar(&o.takeoverFlush, "takeover-flush-interval", server.DefaultTakeoverFlush, "how often a terminal takeover's typed bytes reach the audit log while no line is entered (each entered line is written at once)")
	fs.BoolVar(&o.console, "console", true, "serve the web console at /ui/ (docs/console.md)")
	fs.DurationVar(&o.reaperInterval, "reaper-interval", server.DefaultReaperInterval, "how often expired sandboxes are destroyed")
	fs.IntVar(&o.maxConcurrent, "max-concurrent", 0, "most sandboxes running at once, all accounts together (0: no limit)")
	fs.IntVar(&o.maxConcurrentPerAccount, "max-concurrent-per-account", 0, "most sandboxes one account may run at once (0: no limit)")
	fs.Float64Var(&o.monthlySandboxHours, "monthly-sandbox-hours", 0, "sandbox-hours one account may use per calendar month, UTC (0: no limit)")
	fs.StringVar(&o.maxSize, "max-size", "", "largest `size` a create may ask for: small, medium or large (default any)")
	fs.IntVar(&o.rateLifecycle, "rate-lifecycle", 0, "sandbox creates, deletes, extends, pauses, resumes, forks and restores per account per minute (0: 20, or 1000 in local mode; -1: no limit)")
	fs.IntVar(&o.rateOps, "rate-ops", 0, "exec and sandbox tool calls per account per minute (0: 120, or 10000 in local mode; -1: no limit)")
	fs.IntVar(&o.rateAuth, "rate-auth", 0, "signups and logins per client IP, and logins per email, per minute (0: 10, or 100 in local mode; -1: no limit)")
	fs.IntVar(&o.warmPool, "warm-pool", defaultWarmPool, "sandboxes of the default size kept started ahead of need, so creates are fast (0: none)")
	fs.IntVar(&o.preparedPool, "prepared-pool", defaultPreparedPool, "cold creates' disks, mounts and cgroups made ahead of need (local driver; 0: none)")
	fs.StringVar(&o.clones, "disk-clones", local.ClonesAuto, "local driver: how sandbox disks are copied for snapshots and forks: auto (copy-on-write clones on a loop-mounted XFS when root with xfsprogs, else copies), xfs (clones or fail), off (copies)")
	fs.StringVar(&o.sidecarCopies, "sidecar-copies", "", "local driver, as root: the `directory` of the host-wide tmpfs (huge pages) the sidecar binary is run from, a copy per binary, so jails start with fewer page faults; off: run the binary where it is (default "+local.DefaultSidecarCopies+")")
	fs.DurationVar(&o.maxPausedAge, "max-paused-age", server.DefaultMaxPausedAge, "how long a sandbox may stay paused before it is destroyed (-1s: forever)")
	fs.IntVar(&o.pausedLimit, "paused-limit", 0, "paused sandboxes one account may keep (0: 10; -1: no limit)")
	fs.IntVar(&o.snapshotLimit, "snapshot-limit", 0, "snapshots one account may keep (0: 10; -1: no limit)")
	fs.IntVar(&o.rateSnapshot, "rate-snapshot", 0, "snapshots taken per account per minute (0: 10, or 1000 in local mode; -1: no limit)")
	fs.Int64Var(&o.minFreeDiskMiB, "min-free-disk-mib", 0, "local driver: free space (MiB) of the state directory's filesystem below which creates and uploads are refused with 507, and below half of which running sandboxes are frozen (0: 1024, or a tenth of a smaller filesystem; -1: no watermark)")
	fs.Int64Var(&o.maxHostThreads, "max-host-threads", 0, "local driver: the host's tasks (threads included) creates may approach, a tenth kept in reserve (0: the kernel's pid_max or threads-max, whichever is smaller)")
	fs.Int64Var(&o.maxSandboxThreads, "max-sandbox-threads", 0, "local driver: the tasks all sandboxes together may hold before creates are refused with 503 host_capacity (0: no cap of its own)")
	fs.Int64Var(&o.minFreeMemoryMiB, "min-free-memory-mib", 0, "local driver: available memory (MiB) creates leave on the host (0: 256, or a twentieth of the memory if more)")
	fs.Int64Var(&o.heldOutputMiB, "held-output-mib", 0, "memory (MiB) all answers held whole (JSON exec, interpreter and process output answers) together may take until audited; an exec reserves 4 × (2 × max_output_bytes + 64 KiB) before it runs, else 503 host_capacity (0: an eighth of the host's memory)")
	fs.Int64Var(&o.heldOutputAcctMiB, "held-output-account-mib", 0, "the share (MiB) of --held-output-mib one account's held answers may take at once, else 429 limit_exceeded (0: half of it)")
	storageFlags(fs, &o.storage)
	o.secretPaths = map[string]string{}
	for _, sf := range secretFiles {
		fs.Func(sf.flag, "`file` (mode 0600, or /dev/fd/N) holding "+sf.what, func(v string) error {
			o.secretPaths[sf.flag] = v
			return nil
		})
	}
	fs.StringVar(&o.secretsDir, "secrets-dir", "", "`directory` holding any of the files bootstrap-api-key, jwt-secret, bastion-key and secrets-key (a mounted Kubernetes Secret)")
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
then the defaults shown. Secrets (--bootstrap-key-file, --jwt-secret-file,
--bastion-key-file, --secrets-key-file, --secrets-dir) are read from files
only their owner can read, or a descriptor (/dev/fd/N), never from the
environment, which stays readable in /proc for as long as the server runs:
%s, %s, %s and %s are refused.

Flags:
`, bootstrapKeyEnv, jwtSecretEnv, bastionKeyEnv, secretsKeyEnv)
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
	if err := applyEnvAndFile(fs, set, file, o.configFile, getenv); err != nil {
		return nil, err
	}
	if err := checkOldSecretEnv(getenv); err != nil {
		return nil, err
	}
	switch {
	case o.db != "" && o.dbFile != "":
		return nil, usageErrorf("--db and --db-file both name the database; keep one")
	case o.db == "" && o.dbFile == "":
		o.db = "sqlite:" + filepath.Join(o.stateDir, "boxkite.db")
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// applyEnvAndFile sets each flag the command line left unset from its
// environment variable, else from the config file's key.
func applyEnvAndFile(fs *flag.FlagSet, set map[string]bool, file map[string]string, configFile string, getenv func(string) string) error {
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
				errs = append(errs, usageErrorf("%s: %s = %q: %v", configFile, f.Name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// checkOldSecretEnv refuses the environment variables secrets were once
// read from, so a secret left there is not silently ignored.
func checkOldSecretEnv(getenv func(string) string) error {
	for _, sf := range secretFiles {
		if getenv(sf.oldEnv) != "" {
			return &usageError{
				msg: fmt.Sprintf("%s is set: boxkite-server no longer reads secrets from its environment, which stays readable in /proc/<pid>/environ", sf.oldEnv),
				hint: fmt.Sprintf("unset it, write the value to a file only you can read (umask 077; printf '%%s' \"$%s\" > FILE) and pass --%s FILE",
					sf.oldEnv, sf.flag),
			}
		}
	}
	return nil
}

// validate checks the resolved settings' values and their combinations.
func (o *options) validate() error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usageErrorf("log level %q: want debug, info, warn or error", o.logLevel)
	}
	switch o.maxSize {
	case "", "small", "medium", "large":
	default:
		return usageErrorf("max size %q: want small, medium or large", o.maxSize)
	}
	switch o.driver {
	case "local", "kube":
	default:
		return usageErrorf("driver %q: want local or kube", o.driver)
	}
	if o.minFreeDiskMiB < -1 || o.maxHostThreads < 0 || o.maxSandboxThreads < 0 || o.minFreeMemoryMiB < 0 {
		return usageErrorf("host limits must not be negative (0 means the default; --min-free-disk-mib -1 turns the watermark off)")
	}
	if o.heldOutputMiB < 0 || o.heldOutputAcctMiB < 0 {
		return usageErrorf("--held-output-mib and --held-output-account-mib must not be negative (0 means the default)")
	}
	if o.warmPool < 0 || o.preparedPool < 0 {
		return usageErrorf("warm pool %d, prepared pool %d: must not be negative (0 means none)", o.warmPool, o.preparedPool)
	}
	if o.idRangeFirst < 0 || o.idRangeCount < 0 {
		return usageErrorf("id ranges: first %d and count %d must not be negative (0 means the default)", o.idRangeFirst, o.idRangeCount)
	}
	if o.maxConcurrent < 0 || o.maxConcurrentPerAccount < 0 || o.monthlySandboxHours < 0 {
		return usageErrorf("fair-use limits must not be negative (0 means no limit)")
	}
	if _, err := o.imagePullSecrets(); err != nil {
		return err
	}
	if _, err := o.controlPlaneLabels(); err != nil {
		return err
	}
	switch corev1.PullPolicy(o.pullPolicy) {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return usageErrorf("image pull policy %q: want Always, IfNotPresent or Never", o.pullPolicy)
	}
	if o.adminListen != "" {
		if err := checkLoopback(o.adminListen); err != nil {
			return &usageError{
				msg:  fmt.Sprintf("--admin-listen %s: %v", o.adminListen, err),
				hint: "profiles expose the server's memory; serve them on loopback (127.0.0.1:6060) and reach them over SSH",
			}
		}
	}
	return nil
}

// imagePullSecrets are the names --image-pull-secrets gives, each a
// Secret's name (a DNS subdomain).
func (o *options) imagePullSecrets() ([]string, error) {
	var names []string
	for n := range strings.SplitSeq(o.pullSecrets, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return nil, &usageError{
				msg:  fmt.Sprintf("--image-pull-secrets: %q is not a Secret name: %s", n, strings.Join(errs, "; ")),
				hint: "give the names of Secrets in the sandbox namespace, comma-separated: --image-pull-secrets regcred,other",
			}
		}
		names = append(names, n)
	}
	return names, nil
}

// controlPlaneLabels are the labels --control-plane-labels gives; nil
// for the driver's default.
func (o *options) controlPlaneLabels() (map[string]string, error) {
	if strings.TrimSpace(o.cpLabels) == "" {
		return nil, nil
	}
	m, err := labels.ConvertSelectorToLabelsMap(o.cpLabels)
	if err != nil {
		return nil, &usageError{
			msg:  fmt.Sprintf("--control-plane-labels %q: %v", o.cpLabels, err),
			hint: "give the server pods' labels as k=v,k=v, e.g. app.kubernetes.io/name=boxkite-server",
		}
	}
	return m, nil
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

// readSecrets reads the secrets o names, by flag or in --secrets-dir,
// and the DSN of --db-file.
func readSecrets(o *options) error {
	if o.dbFile != "" {
		dsn, err := secretfile.Read(o.dbFile)
		if err != nil {
			return &usageError{msg: fmt.Sprintf("--db-file: %v", err), hint: "a secret file must be readable by the server's user only (chmod 600 FILE)"}
		}
		o.db = dsn
	}
	for _, sf := range secretFiles {
		path := o.secretPaths[sf.flag]
		if o.secretsDir != "" {
			inDir := filepath.Join(o.secretsDir, sf.name)
			if _, err := os.Stat(inDir); err == nil {
				if path != "" {
					return usageErrorf("--%s and --secrets-dir both give %s; keep one", sf.flag, sf.name)
				}
				path = inDir
			}
		}
		if path == "" {
			continue
		}
		v, err := secretfile.Read(path)
		if err != nil {
			return &usageError{msg: fmt.Sprintf("--%s: %v", sf.flag, err), hint: "a secret file must be readable by the server's user only (chmod 600 FILE)"}
		}
		switch sf.flag {
		case "bootstrap-key-file":
			o.bootstrapKey = v
		case "jwt-secret-file":
			o.jwtSecret = v
		case "bastion-key-file":
			o.bastionKey = v
		case "secrets-key-file":
			o.secretsKey = v
		}
	}
	return nil
}

// usageError is a mistake in flags, environment or config file: exit 2.
type usageError struct{ msg, hint string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}
