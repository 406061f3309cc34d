package e2bport

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/e2b/envd"
	"github.com/boxkite/boxkite/server/internal/allowlist"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// Sessions is the envd side's view: e2b.Sessions, a running sandbox opened
// for a token's key, and the running sandboxes with their accounts' keys.
type Sessions struct {
	d    Deps
	auth *Auth
	life *Lifecycle
}

var _ e2b.Sessions = (*Sessions)(nil)

func (ss *Sessions) Session(ctx context.Context, accountID, sandboxID, keyID string, env map[string]string) (envd.Session, error) {
	acct, err := ss.d.Store.AccountByID(ctx, accountID)
	if errors.Is(err, model.ErrNotFound) {
		return nil, envd.ErrGone
	}
	if err != nil {
		return nil, fmt.Errorf("load account: %w", err)
	}
	key, err := ss.auth.accountKey(ctx, acct.ID, keyID)
	if err != nil || key == nil {
		return nil, cmp.Or(err, envd.ErrRevoked)
	}
	// envd traffic acts for the account its access token was issued to.
	if c := authz.From(ctx); c != nil && c.Account == nil {
		c.Account = acct
	}
	sb, err := ss.life.running(ctx, acct, sandboxID)
	if errors.Is(err, e2b.ErrNotFound) {
		return nil, envd.ErrGone
	}
	if err != nil {
		return nil, err
	}
	return &session{d: ss.d, acct: acct, sb: sb, keyID: keyID, expires: key.ExpiresAt, demotions: key.Demotions, env: env}, nil
}

func (ss *Sessions) Running(ctx context.Context, sandboxID string) ([]envd.Running, error) {
	var sbs []*model.Sandbox
	var err error
	if sandboxID == "" {
		sbs, err = ss.d.Store.SandboxesWithStatus(ctx, api.StatusActive)
	} else {
		sbs, err = ss.one(ctx, sandboxID)
	}
	if err != nil {
		return nil, fmt.Errorf("list running sandboxes: %w", err)
	}
	keys := map[string][]string{} // account → valid key ids
	out := make([]envd.Running, 0, len(sbs))
	for _, sb := range sbs {
		ids, ok := keys[sb.AccountID]
		if !ok {
			if ids, err = ss.auth.validKeys(ctx, sb.AccountID); err != nil {
				return nil, err
			}
			keys[sb.AccountID] = ids
		}
		out = append(out, envd.Running{SandboxID: sb.ID, KeyIDs: ids})
	}
	return out, nil
}

// one is the sandbox id as a list, empty when it is not running.
func (ss *Sessions) one(ctx context.Context, id string) ([]*model.Sandbox, error) {
	sb, err := ss.d.Store.SandboxByID(ctx, id)
	if errors.Is(err, model.ErrNotFound) || err == nil && sb.Status != api.StatusActive {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []*model.Sandbox{sb}, nil
}

// session is envd.Session: one running sandbox, acted on for its account.
type session struct {
	d     Deps
	acct  *model.Account
	sb    *model.Sandbox
	keyID string // the API key the envd token was issued to
	// expires is when that key expires (nil: never), which ends the
	// session's requests as its revocation would.
	expires *time.Time
	// demotions is the key's count of demotions (model.APIKey.Demotions)
	// when the session was resolved: a demotion past it ends the
	// session's requests, as the REST API's of an admin key.
	demotions int64
	env       map[string]string
}

// Revocable ends ctx when the session's key is revoked (the server's
// revocations), demoted or expires.
func (e *session) Revocable(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := e.d.WatchRevocation(e.keyID, e.expires, e.demotions, cancel)
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

func (e *session) SandboxID() string      { return e.sb.ID }
func (e *session) Env() map[string]string { return e.env }
func (e *session) ScrubOutput() bool      { return !e.acct.KeepOutputSecrets }

func (e *session) ReserveInterpreter() (func(), error) { return e.d.ReserveInterpreter(e.sb.AccountID) }

func (e *session) ReserveFileOp(op string, heldOutput int64) (func(), error) {
	return e.d.ReserveFileOp(e.sb.AccountID, op, heldOutput)
}

func (e *session) allowlist(ctx context.Context) (*allowlist.Rules, error) {
	rules, err := e.d.Store.AllowedCommands(ctx, e.acct.ID)
	if err != nil || len(rules) == 0 {
		return nil, err
	}
	return e.d.Allowlists.Get(rules)
}

func (e *session) CheckCommand(ctx context.Context, command string) error {
	al, err := e.allowlist(ctx)
	if err != nil || al == nil {
		return err
	}
	return al.Check(command)
}

func (e *session) Allowlisted(ctx context.Context) (bool, error) {
	al, err := e.allowlist(ctx)
	return al != nil, err
}

func (e *session) CheckCode(ctx context.Context, code string) error {
	al, err := e.allowlist(ctx)
	if err != nil || al == nil {
		return err
	}
	return al.CheckProgram("python3", []string{"-c", code}, false)
}

func (e *session) Interactive(ctx context.Context, req api.InteractiveRequest) (*websocket.Conn, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return nil, err
	}
	return e.d.DialSidecarWS(r, e.sb, "/exec/interactive", req.Query(), "could not start the command in the sandbox")
}

func (e *session) Exec(ctx context.Context, req api.ExecRequest) (api.ExecResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return api.ExecResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.Timeout)*time.Second+30*time.Second)
	defer cancel()
	resp, err := e.Sidecar(ctx, http.MethodPost, "/exec", nil, bytes.NewReader(body), http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return api.ExecResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if ae := sidecar.Refusal(resp); ae != nil {
			return api.ExecResult{}, ae
		}
		return api.ExecResult{}, model.SandboxFailed("run a command in")
	}
	var res api.ExecResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return api.ExecResult{}, fmt.Errorf("decode exec result: %w", err)
	}
	return res, nil
}

func (e *session) Sidecar(ctx context.Context, method, path string, q url.Values, body io.Reader, hdr http.Header) (*http.Response, error) {
	sb := e.sb
	client, err := e.d.Sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		e.d.Log.ErrorContext(ctx, "sidecar client", "sandbox", sb.ID, "err", err)
		return nil, model.SandboxFailed("reach")
	}
	req, err := sidecar.NewRequest(ctx, method, path, q, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set(api.HeaderSidecarToken, sb.Endpoint.Token)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sidecar request: %w", ctx.Err())
		}
		e.d.Log.ErrorContext(ctx, "sidecar request failed", "sandbox", sb.ID, "path", path, "err", err)
		return nil, e.d.Sandboxes.Unreachable(ctx, sb)
	}
	return resp, nil
}

func (e *session) Audit(ctx context.Context, a envd.AuditEntry) error {
	return e.d.Audit.Append(ctx, audit.Record{
		Sandbox: e.sb, Operation: a.Operation, Detail: a.Detail, ExitCode: a.ExitCode, Started: a.Started, Duration: a.Duration,
	})
}

// MemoryKilled asks the driver whether the sandbox's memory limit killed
// one of its processes since it last asked (model.MemoryKillDriver, the
// count /v1's exec asks too); a driver that cannot tell, or fails to,
// says no.
func (e *session) MemoryKilled(ctx context.Context) bool {
	md, ok := e.d.Driver.(model.MemoryKillDriver)
	if !ok {
		return false
	}
	killed, err := md.MemoryKilled(ctx, e.sb.ID)
	if err != nil {
		e.d.Log.WarnContext(ctx, "read a sandbox's memory kills", "sandbox", e.sb.ID, "err", err)
		return false
	}
	return killed
}
