package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/e2b/envd"
	"github.com/boxkite/boxkite/server/internal/allowlist"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sandbox"
)

// The E2B facade's view of the control plane (server/e2b.ControlPlane and
// envd.Session). It lives here, next to what it calls, until the split of
// this package gives the facade services to call instead (issue 20).

// MountE2B serves h for the requests match selects (E2B's control-plane
// paths and sandbox traffic), on the same listener as the API, behind
// the same request log, ids and panic recovery.
func (s *Server) MountE2B(h http.Handler, match func(*http.Request) bool) {
	s.e2b, s.e2bMatch = h, match
}

// E2B returns the control plane as the E2B facade consumes it.
func (s *Server) E2B() e2b.ControlPlane { return e2bPort{s} }

type e2bPort struct{ s *Server }

type e2bCaller struct {
	acct *model.Account
	key  *model.APIKey
}

func (c e2bCaller) AccountID() string { return c.acct.ID }
func (c e2bCaller) KeyID() string     { return c.key.ID }

func (p e2bPort) account(c e2b.Caller) *model.Account { return c.(e2bCaller).acct }

func (p e2bPort) Authenticate(ctx context.Context, key string) (e2b.Caller, error) {
	s := p.s
	if key == "" {
		return nil, httpx.ErrNoCredentials
	}
	if !model.ValidAPIKey(key) {
		return nil, errInvalidKey
	}
	k, acct, err := s.store.APIKeyByHash(ctx, model.HashAPIKey(key))
	if errors.Is(err, model.ErrNotFound) || err == nil && k.RevokedAt != nil {
		return nil, errInvalidKey
	}
	if err != nil {
		return nil, fmt.Errorf("look up api key: %w", err)
	}
	s.touches.touch(k, s.now())
	// The request acts for the account from here, as a REST request does
	// once the guard authenticated it: every data access is authorized
	// against it (server/internal/authz).
	if c := authz.From(ctx); c != nil {
		c.Account, c.Key = acct, k
	}
	return e2bCaller{acct, k}, nil
}

func (p e2bPort) Create(ctx context.Context, c e2b.Caller, spec e2b.CreateSpec) (e2b.Sandbox, error) {
	s, acct := p.s, p.account(c)
	if spec.Lifetime > s.cfg.MaxLifetime {
		return e2b.Sandbox{}, httpx.Invalid("timeout", fmt.Sprintf("timeout exceeds the maximum of %d seconds", int(s.cfg.MaxLifetime/time.Second)), "")
	}
	if spec.ImageID != "" {
		sn, err := s.store.Snapshot(ctx, acct.ID, spec.ImageID)
		if err == nil {
			return p.restore(ctx, c, sn, spec)
		}
		if !errors.Is(err, model.ErrNotFound) {
			return e2b.Sandbox{}, fmt.Errorf("look up snapshot: %w", err)
		}
	}
	sbs, err := s.sandboxes.Start(ctx, acct, sandbox.StartSpec{Lifetime: spec.Lifetime, ImageID: spec.ImageID, AutoPause: spec.AutoPause})
	if err != nil {
		return e2b.Sandbox{}, err
	}
	return e2bSandbox(sbs[0]), nil
}

// restore is a create whose template is one of the caller's snapshots: a
// new sandbox with its files, kept spec.Lifetime.
func (p e2bPort) restore(ctx context.Context, c e2b.Caller, sn *model.Snapshot, spec e2b.CreateSpec) (e2b.Sandbox, error) {
	sb, err := p.s.snap.Restore(ctx, p.account(c), sn, "")
	if err != nil {
		return e2b.Sandbox{}, err
	}
	return p.keep(ctx, c, sb, spec.Lifetime)
}

// keep sets a sandbox the facade started from a snapshot to end lifetime
// from now, as E2B's timeout says.
func (p e2bPort) keep(ctx context.Context, c e2b.Caller, sb *model.Sandbox, lifetime time.Duration) (e2b.Sandbox, error) {
	out, err := p.SetExpiry(ctx, c, sb.ID, p.s.now().Add(lifetime))
	if err != nil {
		return e2bSandbox(sb), err
	}
	return out, nil
}

func (p e2bPort) Snapshot(ctx context.Context, c e2b.Caller, id, name string) (e2b.SnapshotInfo, error) {
	acct := p.account(c)
	sb, err := p.live(ctx, acct, id)
	if err != nil {
		return e2b.SnapshotInfo{}, err
	}
	sn, err := p.s.snap.Take(ctx, acct, sb, name)
	if err != nil {
		return e2b.SnapshotInfo{}, err
	}
	return e2bSnapshot(sn), nil
}

func e2bSnapshot(sn *model.Snapshot) e2b.SnapshotInfo {
	return e2b.SnapshotInfo{ID: sn.ID, SandboxID: sn.SandboxID, Name: sn.Label}
}

func (p e2bPort) Snapshots(ctx context.Context, c e2b.Caller, sandboxID string) ([]e2b.SnapshotInfo, error) {
	acct := p.account(c)
	if sandboxID != "" {
		// Only the caller's sandboxes, gone ones included: their
		// snapshots outlive them.
		if _, err := p.s.store.Sandbox(ctx, acct.ID, sandboxID); errors.Is(err, model.ErrNotFound) {
			return nil, e2b.ErrNotFound
		} else if err != nil {
			return nil, fmt.Errorf("load sandbox: %w", err)
		}
	}
	sns, err := p.s.store.ListSnapshots(ctx, acct.ID, sandboxID)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	out := make([]e2b.SnapshotInfo, 0, len(sns))
	for _, sn := range sns {
		if sn.Status == api.SnapshotCompleted {
			out = append(out, e2bSnapshot(sn))
		}
	}
	return out, nil
}

func (p e2bPort) DeleteSnapshot(ctx context.Context, c e2b.Caller, id string) error {
	sn, err := p.s.store.Snapshot(ctx, p.account(c).ID, id)
	if errors.Is(err, model.ErrNotFound) {
		return e2b.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("load snapshot: %w", err)
	}
	return p.s.snap.Delete(ctx, sn)
}

func (p e2bPort) Fork(ctx context.Context, c e2b.Caller, id string, count int, lifetime time.Duration) ([]e2b.Sandbox, error) {
	acct := p.account(c)
	sb, err := p.live(ctx, acct, id)
	if err != nil {
		return nil, err
	}
	kids, err := p.s.snap.Fork(ctx, acct, sb, count)
	if err != nil {
		return nil, err
	}
	out := make([]e2b.Sandbox, len(kids))
	for i, k := range kids {
		if out[i], err = p.keep(ctx, c, k, lifetime); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func e2bSandbox(sb *model.Sandbox) e2b.Sandbox {
	return e2b.Sandbox{
		ID: sb.ID, AccountID: sb.AccountID, Size: sb.Size, StorageGB: sb.StorageGB,
		CreatedAt: sb.CreatedAt, ExpiresAt: sb.ExpiresAt, Paused: sb.Status == api.StatusPaused, AutoPause: sb.AutoPause,
	}
}

// running loads the caller's running sandbox; one that is not active
// (paused included) is not found, as E2B answers for a sandbox that has
// ended.
func (p e2bPort) running(ctx context.Context, acct *model.Account, id string) (*model.Sandbox, error) {
	sb, err := p.live(ctx, acct, id)
	if err == nil && !sb.Active() {
		return nil, e2b.ErrNotFound
	}
	return sb, err
}

// live loads the caller's running or paused sandbox.
func (p e2bPort) live(ctx context.Context, acct *model.Account, id string) (*model.Sandbox, error) {
	sb, err := p.s.store.Sandbox(ctx, acct.ID, id)
	if errors.Is(err, model.ErrNotFound) || err == nil && !sb.Live() {
		return nil, e2b.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load sandbox: %w", err)
	}
	return sb, nil
}

func (p e2bPort) Sandbox(ctx context.Context, c e2b.Caller, id string) (e2b.Sandbox, error) {
	sb, err := p.live(ctx, p.account(c), id)
	if err != nil {
		return e2b.Sandbox{}, err
	}
	return e2bSandbox(sb), nil
}

func (p e2bPort) Sandboxes(ctx context.Context, c e2b.Caller) ([]e2b.Sandbox, error) {
	sbs, err := p.s.store.ListSandboxes(ctx, p.account(c).ID, true)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	out := make([]e2b.Sandbox, 0, len(sbs))
	for _, sb := range sbs {
		if sb.Live() {
			out = append(out, e2bSandbox(sb))
		}
	}
	return out, nil
}

func (p e2bPort) Destroy(ctx context.Context, c e2b.Caller, id string) error {
	sb, err := p.live(ctx, p.account(c), id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sandbox.CleanupTimeout)
	defer cancel()
	err = p.s.sandboxes.Destroy(ctx, sb.ID, api.StatusDestroyed, model.ReasonDeleted)
	if errors.Is(err, sandbox.ErrNotActive) {
		return e2b.ErrNotFound
	}
	return err
}

func (p e2bPort) Pause(ctx context.Context, c e2b.Caller, id string, keepMemory bool) error {
	sb, err := p.live(ctx, p.account(c), id)
	if err != nil {
		return err
	}
	if sb.Status == api.StatusPaused {
		return e2b.ErrAlreadyPaused
	}
	mode := api.PauseFreeze
	if !keepMemory {
		mode = api.PauseFilesystem
	}
	_, err = p.s.sandboxes.Pause(ctx, sb, mode)
	if ae, ok := errors.AsType[*api.Error](err); ok && ae.Code == api.CodeSandboxPaused {
		return e2b.ErrAlreadyPaused // paused meanwhile in the other mode
	}
	return err
}

func (p e2bPort) Resume(ctx context.Context, c e2b.Caller, id string) (e2b.Sandbox, bool, error) {
	acct := p.account(c)
	sb, err := p.live(ctx, acct, id)
	if err != nil {
		return e2b.Sandbox{}, false, err
	}
	if sb.Active() {
		return e2bSandbox(sb), false, nil
	}
	resumed, _, err := p.s.sandboxes.Resume(ctx, acct, sb)
	if err != nil {
		return e2b.Sandbox{}, false, err
	}
	return e2bSandbox(resumed), true, nil
}

func (p e2bPort) SetExpiry(ctx context.Context, c e2b.Caller, id string, at time.Time) (e2b.Sandbox, error) {
	s := p.s
	cur, err := p.live(ctx, p.account(c), id)
	if err != nil {
		return e2b.Sandbox{}, err
	}
	if !cur.Active() {
		return e2b.Sandbox{}, sandbox.PausedAnswer(cur)
	}
	if max := s.now().Add(s.cfg.MaxLifetime); at.After(max) {
		return e2b.Sandbox{}, httpx.Invalid("timeout", fmt.Sprintf("timeout exceeds the maximum of %d seconds", int(s.cfg.MaxLifetime/time.Second)), "")
	}
	sb, err := s.store.UpdateSandbox(ctx, id, func(sb *model.Sandbox) error {
		if !sb.Active() {
			return sandbox.ErrNotActive
		}
		sb.ExpiresAt = at
		sb.LifetimeMinutes = int(math.Ceil(sb.ExpiresAt.Sub(sb.CreatedAt).Minutes()))
		return nil
	})
	if errors.Is(err, sandbox.ErrNotActive) {
		return e2b.Sandbox{}, e2b.ErrNotFound
	}
	if err != nil {
		return e2b.Sandbox{}, fmt.Errorf("set sandbox expiry: %w", err)
	}
	return e2bSandbox(sb), nil
}

func (p e2bPort) Usage(ctx context.Context, c e2b.Caller, id string) (e2b.Usage, bool, error) {
	sb, err := p.live(ctx, p.account(c), id)
	if err != nil || !sb.Active() { // a paused sandbox has no use to report
		return e2b.Usage{}, false, err
	}
	sd, ok := p.s.baseDriver().(model.StatsDriver)
	if !ok {
		return e2b.Usage{}, false, nil
	}
	st, err := sd.Stats(ctx, sb.ID)
	if errors.Is(err, model.ErrNoStats) {
		return e2b.Usage{}, false, nil
	}
	if err != nil {
		return e2b.Usage{}, false, fmt.Errorf("sandbox stats: %w", err)
	}
	return e2b.Usage{MemoryBytes: st.MemoryBytes}, true, nil
}

// TokenKey derives the envd token key from the token signing key, so the
// two never serve each other's purpose.
func (p e2bPort) TokenKey(ctx context.Context) ([]byte, error) {
	key, err := p.s.jwtKey(ctx)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("boxkite e2b envd token key"))
	return m.Sum(nil), nil
}

func (p e2bPort) Session(ctx context.Context, accountID, sandboxID, keyID string, env map[string]string) (envd.Session, error) {
	s := p.s
	acct, err := s.store.AccountByID(ctx, accountID)
	if errors.Is(err, model.ErrNotFound) {
		return nil, envd.ErrGone
	}
	if err != nil {
		return nil, fmt.Errorf("load account: %w", err)
	}
	if ok, err := p.accountKey(ctx, acct.ID, keyID); err != nil || !ok {
		return nil, cmp.Or(err, envd.ErrRevoked)
	}
	// envd traffic acts for the account its access token was issued to.
	if c := authz.From(ctx); c != nil && c.Account == nil {
		c.Account = acct
	}
	sb, err := p.running(ctx, acct, sandboxID)
	if errors.Is(err, e2b.ErrNotFound) {
		return nil, envd.ErrGone
	}
	if err != nil {
		return nil, err
	}
	return &e2bSession{s: s, acct: acct, sb: sb, keyID: keyID, env: env}, nil
}

// accountKey reports whether keyID is a valid key of the account: not
// revoked, here or (a moment ago) on another server.
func (p e2bPort) accountKey(ctx context.Context, accountID, keyID string) (bool, error) {
	keys, err := p.validKeys(ctx, accountID)
	if err != nil || !slices.Contains(keys, keyID) {
		return false, err
	}
	return p.s.credentialValid(ctx, keyID)
}

// validKeys lists the ids of the account's keys that are not revoked.
func (p e2bPort) validKeys(ctx context.Context, accountID string) ([]string, error) {
	keys, err := p.s.store.ListAPIKeys(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	var ids []string
	for _, k := range keys {
		if k.RevokedAt == nil {
			ids = append(ids, k.ID)
		}
	}
	return ids, nil
}

func (p e2bPort) Running(ctx context.Context) ([]envd.Running, error) {
	sbs, err := p.s.store.SandboxesWithStatus(ctx, api.StatusActive)
	if err != nil {
		return nil, fmt.Errorf("list running sandboxes: %w", err)
	}
	keys := map[string][]string{} // account → valid key ids
	out := make([]envd.Running, 0, len(sbs))
	for _, sb := range sbs {
		ids, ok := keys[sb.AccountID]
		if !ok {
			if ids, err = p.validKeys(ctx, sb.AccountID); err != nil {
				return nil, err
			}
			keys[sb.AccountID] = ids
		}
		out = append(out, envd.Running{SandboxID: sb.ID, KeyIDs: ids})
	}
	return out, nil
}

// e2bSession is envd.Session: one running sandbox, acted on for its account.
type e2bSession struct {
	s     *Server
	acct  *model.Account
	sb    *model.Sandbox
	keyID string // the API key the envd token was issued to
	env   map[string]string
}

// Revocable ends ctx when the session's key is revoked (revoke.go).
func (e *e2bSession) Revocable(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := e.s.revocations.watch(e.keyID, cancel, e.s.now())
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

func (e *e2bSession) SandboxID() string      { return e.sb.ID }
func (e *e2bSession) Env() map[string]string { return e.env }
func (e *e2bSession) ScrubOutput() bool      { return !e.acct.KeepOutputSecrets }

func (e *e2bSession) allowlist(ctx context.Context) (*allowlist.Rules, error) {
	rules, err := e.s.store.AllowedCommands(ctx, e.acct.ID)
	if err != nil || len(rules) == 0 {
		return nil, err
	}
	return e.s.allowlists.Get(rules)
}

func (e *e2bSession) CheckCommand(ctx context.Context, command string) error {
	al, err := e.allowlist(ctx)
	if err != nil || al == nil {
		return err
	}
	return al.Check(command)
}

func (e *e2bSession) CheckCode(ctx context.Context, code string) error {
	al, err := e.allowlist(ctx)
	if err != nil || al == nil {
		return err
	}
	return al.CheckProgram("python3", []string{"-c", code}, false)
}

func (e *e2bSession) Interactive(ctx context.Context, req api.InteractiveRequest) (*websocket.Conn, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return nil, err
	}
	return e.s.dialSidecarWS(r, e.sb, "/exec/interactive", req.Query(), "could not start the command in the sandbox")
}

func (e *e2bSession) Exec(ctx context.Context, req api.ExecRequest) (api.ExecResult, error) {
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
		if ae := sidecarRefusal(resp); ae != nil {
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

func (e *e2bSession) Sidecar(ctx context.Context, method, path string, q url.Values, body io.Reader, hdr http.Header) (*http.Response, error) {
	s, sb := e.s, e.sb
	client, err := s.sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		s.log.ErrorContext(ctx, "sidecar client", "sandbox", sb.ID, "err", err)
		return nil, model.SandboxFailed("reach")
	}
	u := "http://sidecar" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build sidecar request: %w", err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("X-Sidecar-Auth-Token", sb.Endpoint.Token)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sidecar request: %w", ctx.Err())
		}
		s.log.ErrorContext(ctx, "sidecar request failed", "sandbox", sb.ID, "path", path, "err", err)
		return nil, s.sandboxes.Unreachable(ctx, sb)
	}
	return resp, nil
}

func (e *e2bSession) Audit(ctx context.Context, a envd.AuditEntry) error {
	return e.s.audit(ctx, audit.Record{
		Sandbox: e.sb, Operation: a.Operation, Detail: a.Detail, ExitCode: a.ExitCode, Started: a.Started, Duration: a.Duration,
	})
}
