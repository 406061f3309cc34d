// Tests at the module root guard the architecture: the import table of
// docs/architecture.md (this file; architecture_test.go checks the
// document's package table against it and the tree) and package
// documentation (pkgdoc_test.go).
package boxkite_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/boxkite/boxkite"

// depRule says what one of our packages may import from this module and what
// it must never link, directly or indirectly. Each forbidden entry carries why.
type depRule struct {
	ours      []string          // allowed packages of ours (relative to the module); nil = none
	anyOurs   bool              // any package of ours except those in forbidden
	forbidden map[string]string // import-path prefix (ours relative, or external) → reason
	stdOnly   bool              // nothing outside the standard library at all
	// never lists packages of ours (exact, module-relative) it must not
	// link even where a prefix of forbidden would be too broad, with why.
	never map[string]string
}

var (
	clientGo  = map[string]string{"k8s.io/": "client-go is for server/kube only; it would bloat this binary"}
	imageLib  = map[string]string{"github.com/google/go-containerregistry": "image archives are read by server/images only"}
	sqlDriver = map[string]string{
		"modernc.org/sqlite":   "SQL drivers belong to server/sqlstore",
		"github.com/jackc/pgx": "SQL drivers belong to server/sqlstore",
	}
)

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// rules is docs/architecture.md's import table: every package of the
// module has a row (TestDeps fails for one without).
var rules = map[string]depRule{
	"client/api":         {stdOnly: true},
	"internal/criu":      {stdOnly: true},
	"internal/netsource": {stdOnly: true},
	"internal/ctxsleep":  {stdOnly: true},
	"internal/apihttp":   {ours: []string{"client/api"}, forbidden: merge(clientGo, sqlDriver, imageLib, map[string]string{"github.com/spf13/cobra": "HTTP plumbing of the two APIs; the sidecar binary links it and stays small"})},
	"client": {ours: []string{"client/api", "internal/ctxsleep"}, forbidden: merge(clientGo, sqlDriver, imageLib, map[string]string{
		"github.com/spf13/cobra":             "the client is a library; the CLI wraps it",
		"github.com/charmbracelet/bubbletea": "the client is a library; the TUI wraps it",
		"database/sql":                       "the client talks HTTP only",
	})},
	"tools": {ours: []string{"client/api"}, forbidden: map[string]string{
		"github.com/spf13/cobra": "tools are shared by the CLI, MCP and the server",
	}},
	"tui": {ours: []string{"client/api"}, forbidden: map[string]string{
		"github.com/spf13/cobra": "TUI models depend on a small Source interface, not on the CLI",
	}},
	"handoff": {ours: []string{"client/api"}, forbidden: map[string]string{
		"github.com/spf13/cobra":             "handoff adapters are a library; the CLI wraps them",
		"github.com/charmbracelet/bubbletea": "handoff adapters are a library",
	}},
	"cli": {ours: []string{"client", "client/api", "tui", "handoff", "tools", "internal/criu"}, forbidden: merge(clientGo, sqlDriver, imageLib, map[string]string{
		"github.com/gliderlabs/ssh": "ssh belongs to the bastion",
		"golang.org/x/crypto/ssh":   "ssh belongs to the bastion",
	})},
	"tools/mcpserver": {ours: []string{"client/api", "tools"}, forbidden: map[string]string{
		"github.com/spf13/cobra": "the MCP server is shared by boxkite-mcp and the control plane",
	}},
	"server": {ours: []string{"client/api", "internal/apihttp", "tools", "tools/mcpserver", "server/model", "server/accounts", "server/volumes", "server/mcpconns", "server/hostedmcp", "server/takeover", "server/imagesapi", "server/exec", "server/proxy", "server/auditlog", "server/allowlists", "server/egress", "server/e2b", "server/e2b/envd", "server/e2bport", "server/secrets", "server/snapshot", "server/preview", "server/status", "server/webhooks", "server/sandbox", "server/orgs", "server/oauth", "server/admin", "server/demo", "server/storagesync"}, forbidden: merge(clientGo, sqlDriver)},
	// The leaf of the control plane: domain records and the Store and
	// Driver contracts (docs/architecture.md).
	"server/model": {ours: []string{"client/api"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "model is the leaf every part of the control plane imports; the control plane imports it, never the reverse",
	}},
	"server/internal/unixsock": {forbidden: merge(clientGo, sqlDriver, imageLib)},
	// Plumbing of the control plane (server/internal): leaves under the
	// subsystems, none of which knows the store, the drivers or another.
	"server/internal/allowlist": {ours: []string{"client/api"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/model": "the allowlist is pure policy over command lines; the caller loads an account's rules",
	}},
	"server/internal/authn": {forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/model": "authn holds stateless credential cryptography; looking credentials up is the guard's",
	}},
	"server/internal/httpx": {ours: []string{"client/api", "internal/apihttp"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/model": "httpx is HTTP plumbing: it knows no domain record, store or driver",
	}},
	// Subsystems: each serves its own routes (routes.go) and declares
	// what it needs of the rest in its Deps; the server wires them.
	"server/accounts": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/authn"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
	}},
	"server/internal/audit": {ours: []string{"client/api", "tools", "server/model", "server/internal/scrub"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":                "the audit log sits under the subsystems that write it",
		"server/internal/httpx": "audit writes entries; serving them over HTTP is its callers' job",
	}},
	// The lifecycle hub: the other subsystems reach it through functions
	// in their Deps, so it imports none of them.
	"server/sandbox": {ours: []string{"client/api", "internal/keylock", "server/model", "server/egress", "server/internal/httpx", "server/internal/authz", "server/internal/audit", "server/internal/limits", "server/internal/sidecar"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":           "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
		"server/volumes":   "volumes, images, connections and secrets are reached through the small interfaces of its Deps",
		"server/imagesapi": "volumes, images, connections and secrets are reached through the small interfaces of its Deps",
		"server/secrets":   "volumes, images, connections and secrets are reached through the small interfaces of its Deps",
		"server/proxy":     "the proxy calls the lifecycle (LoadActive, FrozenAnswer, …) through its Deps, never the reverse",
		"server/exec":      "exec calls the lifecycle through its Deps, never the reverse",
	}},
	"server/volumes": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
	}},
	"server/status": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/audit", "server/internal/limits"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
	}},
	"server/mcpconns": {ours: []string{"client/api", "server/model", "server/egress", "server/internal/httpx", "server/internal/authz"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
	}},
	"server/hostedmcp": {ours: []string{"client/api", "internal/apihttp", "tools", "tools/mcpserver", "server/internal/httpx"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":       "the hosted MCP endpoint calls the control plane through the http.Handler it is given",
		"server/model": "a facade: it speaks the REST API's wire types, never the store's records",
	}},
	"server/takeover": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/authn", "server/internal/audit"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
	}},
	"server/imagesapi": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/audit"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":        "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
		"server/images": "the API reaches images through its Store interface; cmd/boxkite-server wires server/images in",
	}},
	"server/exec": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/audit", "server/internal/hold", "server/internal/scrub", "server/internal/sidecar"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
		"server/takeover": "exec and takeover are siblings over the sandbox lifecycle; what both need lives under them (authz, sidecar)",
	}},
	"server/proxy": {ours: []string{"client/api", "internal/apihttp", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/audit", "server/internal/hold", "server/internal/scrub", "server/internal/sidecar", "server/internal/iocount"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":      "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
		"server/exec": "exec calls the proxy's Forward through its Deps; the proxy knows nothing of exec",
	}},
	"server/auditlog": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/audit"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":                "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
		"server/internal/authz": "the routes read what LoadSandbox loaded for the caller, through the authorized store the server gives them",
	}},
	"server/internal/metrics": {forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/model": "metrics count what they are told; the server decides what to count",
	}},
	"server/allowlists": {ours: []string{"client/api", "internal/apihttp", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/allowlist"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
	}},
	// Test helper of the subsystems' authorization wrappers; only tests import it.
	"server/internal/authz/authztest": {ours: []string{"server/model", "server/internal/httpx", "server/internal/authz"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "a test helper of the wrappers beside the subsystems' stores",
	}},
	"server/internal/authz": {ours: []string{"client/api", "internal/apihttp", "server/model", "server/internal/httpx"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "authz sits under the subsystems and the server",
	}},
	"server/internal/hold": {ours: []string{"client/api"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/model": "holding an answer's end is HTTP plumbing; the audit entry it waits for is its caller's",
	}},
	"server/internal/limits": {ours: []string{"client/api", "server/model", "server/internal/httpx", "internal/netsource"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "rate limits, idempotency and quotas are mechanics under the server, which configures them",
	}},
	"server/internal/pintls":  {stdOnly: true},
	"server/internal/iocount": {stdOnly: true},
	"server/internal/sidecar": {ours: []string{"client/api", "server/model", "server/internal/authz", "server/internal/unixsock", "server/internal/pintls"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server": "the sidecar client sits under the subsystems that call sidecars",
	}},
	"server/internal/scrub": {ours: []string{"client/api", "tools"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/model": "scrubbing works on bytes and JSON; whether an account wants it is the caller's decision",
	}},
	"server/snapshot": {ours: []string{"client/api", "internal/apihttp", "server/model", "server/internal/httpx"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "the snapshot service reaches the control plane through its Control interface",
		"server/local":    "the service reaches the data through model.SnapshotDriver, whatever the driver",
		"server/sqlstore": "the service keeps its records through model.SnapshotStore",
	}},
	"server/e2b": {ours: []string{"client/api", "internal/apihttp", "internal/ctxsleep", "server/model", "server/internal/authz", "server/e2b/envd"}, forbidden: merge(clientGo, sqlDriver, imageLib, map[string]string{
		"server/sqlstore": "the E2B facade keeps its records through its Store interface; the control plane (whose package it may not import either) wires the SQL store in",
		"server/local":    "the facade reaches sandboxes through the control plane, whatever the driver",
	})},
	// The E2B facade's port: the root wires it; it calls the lifecycle hub
	// and the snapshot service through the small interfaces of its Deps.
	"server/e2bport": {ours: []string{"client/api", "server/model", "server/e2b", "server/e2b/envd", "server/sandbox", "server/internal/httpx", "server/internal/authz", "server/internal/audit", "server/internal/allowlist", "server/internal/sidecar"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "a subsystem gets what it needs through its Deps; the server wires it, never the reverse",
		"server/snapshot": "snapshots are reached through the port's Snapshots interface",
		"server/local":    "the port reaches sandboxes through the lifecycle hub, whatever the driver",
		"server/sqlstore": "the port reads through its Store interface, behind the authorization layer",
	}},
	"server/e2b/envd": {ours: []string{"client/api", "internal/apihttp", "tools", "server/e2b/envdpb/process", "server/e2b/envdpb/process/processconnect", "server/e2b/envdpb/filesystem", "server/e2b/envdpb/filesystem/filesystemconnect", "server/internal/iocount", "server/internal/limits", "internal/netsource"}, forbidden: merge(clientGo, sqlDriver, imageLib, map[string]string{
		"server/local": "envd reaches sandboxes only through its Sandboxes and Session interfaces, whatever the driver",
		"server/kube":  "envd reaches sandboxes only through its Sandboxes and Session interfaces, whatever the driver",
	})},
	// The web console: a client of the API in the same process, which it
	// reaches through the server's http.Handler only.
	"server/console": {ours: []string{"client/api", "internal/apihttp"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":       "the console calls the API through its http.Handler, as the CLI calls it over HTTP",
		"server/model": "the console sees the API's wire types, never the control plane's records",
	}},
	"internal/protogen": {forbidden: map[string]string{"github.com/spf13/cobra": "a go:generate helper: flags from the standard library"}},
	"server/egress":     {ours: []string{"internal/acceptloop"}, forbidden: merge(clientGo, sqlDriver, imageLib)},
	// The accept loop the egress proxy and the sidecar's forwarder share.
	"internal/acceptloop": {stdOnly: true},
	// The secrets broker: its records through its own Store, which
	// server/sqlstore implements; its egress checks are server/egress's.
	"server/secrets": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/audit", "server/internal/scrub", "server/egress"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "the control plane imports the broker, never the reverse",
		"server/sqlstore": "the broker keeps its records through its Store interface; cmd/boxkite-server wires the SQL store in",
	}},
	// Preview URLs: their records through their own Store, sandboxes
	// through the ControlPlane interface the root implements.
	"server/preview": {ours: []string{"client/api", "server/model", "internal/apihttp", "server/internal/httpx", "server/internal/authz"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "the control plane imports previews, never the reverse",
		"server/sqlstore": "previews keep their records through their Store interface",
	}},
	"server/webhooks": {ours: []string{"client/api", "server/model", "server/egress", "server/internal/httpx", "server/internal/authz"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "the control plane imports webhooks, never the reverse",
		"server/sqlstore": "webhooks keep their subscriptions and queue through their Store interface",
	}},
	// Workspace sync to object storage: the backends (the cloud SDKs live
	// here only) and the sync of sandboxes' files through its own Store.
	"server/storagesync": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/iocount"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "the control plane imports storage sync, never the reverse",
		"server/sqlstore": "storage sync keeps its queue through its Store interface",
		"server/local":    "storage sync reads workspaces through its Files interface, whatever the driver",
		"server/kube":     "storage sync reads workspaces through its Files interface, whatever the driver",
	}},
	// Object stores on loopback for tests (SeaweedFS, Azurite, fake-gcs-server).
	"internal/objtest": {ours: []string{"server/storagesync", "internal/testport"}, forbidden: merge(clientGo, sqlDriver, imageLib)},
	// Ports for tests that restart a server on the same port.
	"internal/testport": {stdOnly: true},
	// A locked bytes.Buffer for tests that read what goroutines write.
	"internal/lockedbuf": {stdOnly: true},
	"internal/keylock":   {stdOnly: true},
	// Builds the sidecar linked with cgo, for the local driver's and servertest's tests.
	"internal/cgosidecar": {stdOnly: true},
	// Reads namespaces' inodes and owners for the jail's tests (server/local's, securitytest's).
	"internal/nstest": {forbidden: merge(clientGo, sqlDriver, imageLib)},
	// The socket() probe of the AF_VSOCK refusal's tests (the sidecar's, the jail's).
	"internal/sockprobe": {forbidden: merge(clientGo, sqlDriver, imageLib)},
	"server/oauth": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz", "server/internal/authn"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":           "the control plane imports the authorization server, never the reverse",
		"server/sqlstore":  "the authorization server keeps its records through its Store interface",
		"server/hostedmcp": "the guard, not the authorization server, decides where an OAuth token is taken",
	}},
	"server/demo": {ours: []string{"client/api", "internal/apihttp", "server/internal/httpx"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":       "the control plane imports the playground, never the reverse",
		"server/model": "the playground drives sandboxes through the API in-process, never the store",
	}},
	"server/admin": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "the control plane imports the operator's routes, never the reverse",
		"server/sqlstore": "the operator's routes read and log through their Store interface",
	}},
	"server/orgs": {ours: []string{"client/api", "server/model", "server/internal/httpx", "server/internal/authz"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server":          "the control plane imports organizations, never the reverse",
		"server/sqlstore": "organizations keep their records through their Store interface",
	}},
	"server/sqlstore": {never: map[string]string{"server": "server/sqlstore implements a model contract; the control plane imports it, never the reverse"}, ours: []string{"server/model", "client/api", "tools", "server/e2b", "server/secrets", "server/preview", "server/webhooks", "server/orgs", "server/oauth", "server/admin", "server/storagesync", "server/sqlstore/sqldb"}, forbidden: merge(clientGo)},
	// The SQL machinery under the store: write slot, group commit,
	// generation-checked cache, statement cache, DSNs, migrations.
	"server/sqlstore/sqldb": {forbidden: merge(clientGo, imageLib), never: map[string]string{
		"server/model":    "the SQL machinery knows no domain record; server/sqlstore maps its errors to model's",
		"server/sqlstore": "the store uses the machinery, never the reverse",
		"client/api":      "the SQL machinery knows nothing of the API",
	}},
	"server/local": {never: map[string]string{"server": "server/local implements a model contract; the control plane imports it, never the reverse"}, ours: []string{"server/model", "server/egress", "server/local/idrange", "server/local/loopdisk", "server/local/hostcap", "server/local/hugecopy", "server/local/snapstore", "server/internal/unixsock", "sidecar/jail", "client/api", "tools", "internal/criu", "internal/keylock"}, forbidden: merge(clientGo, sqlDriver)},
	"server/local/idrange": {ours: []string{"client/api", "server/model", "sidecar/jail"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/local": "the leases know nothing of sandboxes; the driver hands their files to its jails",
	}},
	"server/local/loopdisk": {forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/local": "the disks know nothing of sandboxes; the driver decides where each image lives",
		"server/model": "images, loop devices and mounts are host plumbing, no domain record",
	}},
	"server/local/hostcap": {ours: []string{"client/api", "server/model", "sidecar/jail"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/local": "the account of the host knows the driver only through its Source; the driver makes and feeds it",
	}},
	"server/local/hugecopy": {forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/local": "the copies know nothing of sandboxes; the driver runs its jails from one",
		"server/model": "a binary's copies on a tmpfs are host plumbing, no domain record",
	}},
	"server/local/snapstore": {ours: []string{"server/local/loopdisk"}, forbidden: merge(clientGo, sqlDriver, imageLib), never: map[string]string{
		"server/local": "the store knows nothing of sandboxes; the driver copies their disks into it",
		"server/model": "the store keeps images by key; the driver answers model.SnapshotDriver with it",
	}},
	"server/kube":   {never: map[string]string{"server": "server/kube implements a model contract; the control plane imports it, never the reverse"}, ours: []string{"server/model", "server/egress", "server/internal/pintls", "client/api", "tools"}, forbidden: sqlDriver},
	"server/images": {ours: []string{"client/api", "server/egress", "sidecar/jail"}, forbidden: merge(clientGo, sqlDriver)},
	"server/servertest": {anyOurs: true, forbidden: map[string]string{
		"cli": "servertest serves the API; the CLI is tested through it, not inside it",
	}},
	"sidecar": {ours: []string{"client/api", "internal/apihttp", "internal/acceptloop", "internal/keylock"}, forbidden: merge(clientGo, sqlDriver, map[string]string{
		"github.com/spf13/cobra": "the sidecar is small: stdlib, pty, websocket, seccomp",
		"database/sql":           "the sidecar keeps no database",
	})},
	"sidecar/jail":        {ours: []string{"sidecar/internal/forkhook"}, forbidden: merge(clientGo, sqlDriver)},
	"cmd/boxkite":         {anyOurs: true, forbidden: merge(clientGo, sqlDriver, map[string]string{"server": "the CLI starts boxkite-server as a process; it never links it", "sidecar": "the CLI never links the sidecar"})},
	"cmd/boxkite-sidecar": {ours: []string{"sidecar", "sidecar/jail", "client/api", "internal/apihttp", "internal/keylock"}, forbidden: merge(clientGo, sqlDriver, map[string]string{"github.com/spf13/cobra": "the sidecar binary stays small"})},
	"cmd/boxkite-server":  {anyOurs: true, forbidden: map[string]string{"cli": "the server never links the CLI", "tui": "the server never links the TUI"}},
	"cmd/boxkite-mcp":     {anyOurs: true, forbidden: merge(clientGo, sqlDriver, map[string]string{"server": "boxkite-mcp is a client of the control plane", "cli": "boxkite-mcp does not link the CLI", "tui": "no TUI in the MCP server"})},
	"cmd/boxkite-bastion": {anyOurs: true, forbidden: merge(clientGo, sqlDriver, map[string]string{"server": "the bastion is a client of the control plane", "cli": "the bastion does not link the CLI"})},
	// The SDKs' conformance suite: its matcher is stdlib only, so any
	// runner could link it; its test starts the servers and runs the SDKs.
	"sdk/conformance": {stdOnly: true},
	// The runtime's fork hooks, declared once for the sidecar's and the
	// jail's clones.
	"sidecar/internal/forkhook": {stdOnly: true},
	// The jail's seccomp filter.
	"sidecar/jail/internal/seccomppolicy": {forbidden: merge(clientGo, sqlDriver, imageLib)},
	// The E2B envd services' generated code (protobuf messages, Connect
	// handlers): no package of ours but the messages their handlers serve.
	"server/e2b/envdpb":                              {stdOnly: true},
	"server/e2b/envdpb/filesystem":                   {forbidden: merge(clientGo, sqlDriver, imageLib)},
	"server/e2b/envdpb/process":                      {forbidden: merge(clientGo, sqlDriver, imageLib)},
	"server/e2b/envdpb/filesystem/filesystemconnect": {ours: []string{"server/e2b/envdpb/filesystem"}, forbidden: merge(clientGo, sqlDriver, imageLib)},
	"server/e2b/envdpb/process/processconnect":       {ours: []string{"server/e2b/envdpb/process"}, forbidden: merge(clientGo, sqlDriver, imageLib)},
	// Keeps the CLI from querying the terminal at start-up.
	"cli/internal/quietterm": {forbidden: merge(clientGo, sqlDriver, imageLib)},
	// The Dockerfiles and the Helm chart; Go only for its doc and tests.
	"deploy": {stdOnly: true},
	// Reads a secret handed as a file or descriptor (the binaries' flags).
	"internal/secretfile": {stdOnly: true},
	// Helpers of tests: fixtures, loopback registries and servers.
	"handoff/handofftest": {forbidden: merge(clientGo, sqlDriver, imageLib)},
	"internal/npmtest":    {forbidden: merge(clientGo, sqlDriver, imageLib)},
	"internal/kubetest": {ours: []string{"internal/testport", "sidecar/jail"}, forbidden: merge(sqlDriver, map[string]string{
		"server": "the test apiserver and kubelet run pods; the control plane under test is the caller's",
	})},
	"internal/e2bsdk":        {ours: []string{"client", "client/api", "server/e2b", "server/e2b/envd"}, forbidden: merge(clientGo, sqlDriver, imageLib)},
	"internal/e2bsdk/e2btui": {ours: []string{"client", "internal/e2bsdk", "tui"}, forbidden: merge(clientGo, sqlDriver, imageLib)},
	// End-to-end, security and fault suites: they drive the real binaries
	// and the real control plane, so they may link any package of ours.
	"internal/e2e":            {anyOurs: true},
	"internal/e2e/handoffe2e": {anyOurs: true},
	"internal/faulttest":      {anyOurs: true},
	"internal/securitytest":   {anyOurs: true},
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// ourPkg returns the module-relative path of an import path of ours, or "".
func ourPkg(path string) string {
	if path == module {
		return "."
	}
	if rel, ok := strings.CutPrefix(path, module+"/"); ok {
		return rel
	}
	return ""
}

// matches reports whether dep (an import path) is covered by a rule prefix,
// which is module-relative for our packages and absolute otherwise.
func matches(dep, prefix string) bool {
	if rel := ourPkg(dep); rel != "" && !strings.Contains(prefix, ".") && prefix != "database/sql" {
		return rel == prefix || strings.HasPrefix(rel, prefix+"/")
	}
	return dep == prefix || strings.HasPrefix(dep, prefix)
}

func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg, deps := ourPkg(fields[0]), fields[1:]
		rule, ok := rules[pkg]
		if !ok {
			// A package without a row would link anything unnoticed.
			if pkg != "." {
				t.Errorf("%s has no row in rules: add what it may import (docs/architecture.md)", pkg)
			}
			continue
		}
		seen[pkg] = true
		for _, dep := range deps {
			if rule.stdOnly && !isStd(dep) {
				t.Errorf("%s links %s; it must use the standard library only", pkg, dep)
			}
			for prefix, why := range rule.forbidden {
				if matches(dep, prefix) {
					t.Errorf("%s links %s: %s", pkg, dep, why)
				}
			}
			rel := ourPkg(dep)
			if why, ok := rule.never[rel]; ok {
				t.Errorf("%s links %s: %s", pkg, rel, why)
			}
			if rel == "" || rel == pkg || strings.HasPrefix(rel, pkg+"/internal") {
				continue
			}
			if !rule.anyOurs && !slices.Contains(rule.ours, rel) && !allowedTransitively(rule.ours, rel) {
				t.Errorf("%s links %s, which is not in its allowed imports %v", pkg, rel, rule.ours)
			}
		}
	}
	for pkg := range rules {
		if !seen[pkg] {
			t.Errorf("rule for %s matches no package; the layout and the table disagree", pkg)
		}
	}
}

// allowedTransitively accepts a dependency that an allowed package of ours
// itself may link (for example client/api reached through client).
func allowedTransitively(allowed []string, dep string) bool {
	for _, a := range allowed {
		if r, ok := rules[a]; ok && (slices.Contains(r.ours, dep) || allowedTransitively(r.ours, dep)) {
			return true
		}
	}
	return false
}
