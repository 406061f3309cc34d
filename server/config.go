package server

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/exec"
	"github.com/boxkite/boxkite/server/imagesapi"
	"github.com/boxkite/boxkite/server/internal/authn"
	"github.com/boxkite/boxkite/server/sandbox"
	"github.com/boxkite/boxkite/server/secrets"
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
	// AfterTeardownForTests, when set, runs after the driver tore a
	// sandbox down and before its removal is recorded: tests only (the
	// fault suite breaks the database there, as a crash would cut it).
	AfterTeardownForTests func(id string)
	// LockWaitForTests, when set, runs when a lifecycle change of sandbox
	// id (pause, resume, delete, a snapshot's copy) is about to wait for
	// another under way: tests only.
	LockWaitForTests func(id string)
	// HeartbeatForTests, when set, runs before each renewal of the
	// server's heartbeat by Run: tests only (holding it lets the
	// heartbeat lapse, as a stalled database or a paused VM would).
	HeartbeatForTests func()
	// ClockForTests, when set, is the server's clock (the lifecycle and
	// heartbeat leases, the sweeps): tests only, of other packages (this
	// one's move it with SetNow), to move time past a sweep's grace.
	ClockForTests func() time.Time
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
	// HeldOutputBytes bounds the memory all answers held whole (JSON
	// execs, interpreter runs, process output pages, E2B code cells)
	// together take until they are audited: a JSON exec reserves
	// exec.HeldBound(max_output_bytes) before its command runs, the
	// others hold.Interpreter or hold.ProcessOutput, and each is refused
	// (503 host_capacity, resource held_output) when the rest is smaller;
	// default exec.DefaultHeldOutput (an eighth of MemTotal).
	HeldOutputBytes int64
	// HeldOutputAccountBytes is the share of HeldOutputBytes one account
	// may hold (429 limit_exceeded past it); default half of it.
	HeldOutputAccountBytes int64
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
	if c.HeldOutputBytes == 0 {
		c.HeldOutputBytes = exec.DefaultHeldOutput()
	}
	c.HeldOutputAccountBytes = cmp.Or(c.HeldOutputAccountBytes, c.HeldOutputBytes/2)
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
	case c.HeldOutputBytes < 0 || c.HeldOutputAccountBytes < 0:
		return errors.New("the held exec output budgets must not be negative")
	case c.HeldOutputAccountBytes > c.HeldOutputBytes:
		return fmt.Errorf("an account's held exec output (%d bytes) must not be more than the server's (%d bytes)", c.HeldOutputAccountBytes, c.HeldOutputBytes)
	case c.AccessTokenTTL < time.Minute:
		return errors.New("the access token lifetime must be at least one minute")
	}
	return c.Limits.Validate()
}

// Limits are the fair-use limits of sandbox creation (server/sandbox).
type Limits = sandbox.Limits

// DefaultMaxVolumeGB caps size_gb of a volume when Config.MaxVolumeGB is 0.
const DefaultMaxVolumeGB = 100
