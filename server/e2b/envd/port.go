package envd

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
)

// ErrRevoked is what Sandboxes.Open returns when the API key a token was
// issued to is revoked or is not the sandbox's account's: 401.
var ErrRevoked = errors.New("the API key this token was issued to is revoked")

// ErrGone is what Sandboxes.Open returns for a sandbox that is unknown,
// another account's, or no longer running: envd answers it with 502, as
// E2B's own proxy does, which the SDK reads as "the sandbox has ended".
var ErrGone = errors.New("sandbox is not running")

// Sandboxes opens a running sandbox for envd calls. The caller has already
// proved, with a token of the sandbox, that an API key (keyID) gave it the
// right to act on it; the session acts as the account that owns it, for
// as long as that key is valid.
type Sandboxes interface {
	Open(ctx context.Context, sandboxID, keyID string) (Session, error)
	// Running lists the running sandboxes, whoever owns them, with the
	// valid keys of their accounts: only sandboxID (if it runs) when it is
	// not "" (a signed URL on the sandbox's own host), else every one (a
	// signed /files URL on the shared E2B_SANDBOX_URL names no sandbox,
	// only its signature tells).
	Running(ctx context.Context, sandboxID string) ([]Running, error)
}

// Running is a running sandbox and the ids of the API keys that may hold
// its tokens.
type Running struct {
	SandboxID string
	KeyIDs    []string
}

// Session is what envd needs of one running sandbox: its sidecar, reached
// the way /v1 reaches it (the jail, the exec budget), and the account's
// allowlist, audit log and output scrubbing.
type Session interface {
	SandboxID() string
	// Env is the environment every command of the sandbox starts with
	// (the create request's envVars).
	Env() map[string]string
	// CheckCommand applies the account's command allowlist to command.
	CheckCommand(ctx context.Context, command string) error
	// Allowlisted reports whether the account has a command allowlist.
	Allowlisted(ctx context.Context) (bool, error)
	// CheckCode applies it to code for the Python interpreter, as /v1
	// does: code runs as the argument of python3 -c.
	CheckCode(ctx context.Context, code string) error
	// Interactive starts req through the sidecar's interactive exec
	// (api.InteractiveRequest has the frame protocol). The allowlist is
	// the caller's to check first.
	Interactive(ctx context.Context, req api.InteractiveRequest) (*websocket.Conn, error)
	// Exec runs a command the facade built itself (file operations) and
	// waits for it.
	Exec(ctx context.Context, req api.ExecRequest) (api.ExecResult, error)
	// Sidecar sends one request to the sidecar's path; the caller closes
	// the response body. A non-2xx answer carries the sidecar's error
	// envelope.
	Sidecar(ctx context.Context, method, path string, query url.Values, body io.Reader, header http.Header) (*http.Response, error)
	// Audit appends an entry for op on the sandbox; an error means the
	// audit log refused it and the operation's result must not be given.
	Audit(ctx context.Context, e AuditEntry) error
	// ScrubOutput reports whether command output returned to the caller
	// is scrubbed of secret-shaped strings (the account's setting).
	ScrubOutput() bool
	// ReserveInterpreter reserves, before a cell is sent, what its
	// outcome (result and error, held until audited) may take of the
	// server's held-output budget, as /v1's interpreter does: an
	// *api.Error (429 limit_exceeded, 503 host_capacity) when it cannot
	// be had; release gives it back.
	ReserveInterpreter() (release func(), err error)
	// ReserveFileOp reserves, before a file operation (Filesystem's stat,
	// ls, make_dir, move, remove) runs its command, what its answer (a
	// JSON exec result and what is parsed from it), counted as heldOutput
	// bytes of output, may take of the held-output budget; the same
	// refusals as ReserveInterpreter's.
	ReserveFileOp(op string, heldOutput int64) (release func(), err error)
	// Revocable returns ctx, ended as soon as the API key behind the
	// token is revoked, and the function that stops watching for that.
	Revocable(ctx context.Context) (context.Context, func())
	// MemoryKilled reports whether the sandbox's memory limit killed one
	// of its processes since it was last asked (the /v1 exec's
	// model.MemoryKillDriver count): asked only when a command ended with
	// a SIGKILL nobody here sent.
	MemoryKilled(ctx context.Context) bool
}

// AuditEntry is one operation for the audit log.
type AuditEntry struct {
	Operation string
	Detail    map[string]any
	ExitCode  *int
	Started   time.Time
	Duration  time.Duration
}
