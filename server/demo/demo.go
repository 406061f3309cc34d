package demo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// The reference's limits.
const (
	Lifetime       = 4 * time.Minute
	MaxConcurrent  = 3
	MaxOutputBytes = 20 << 10
	MaxCommandLen  = 4000
	ExecTimeout    = 10 * time.Second
	// TokenHeader carries a demo sandbox's token.
	TokenHeader = "X-Demo-Token"
)

// Deps is what the playground needs of the control plane.
type Deps struct {
	Log *slog.Logger
	Now func() time.Time
	// Serve is the control plane's API, which the playground calls
	// in-process with Key, an API key of the demo account.
	Serve http.Handler
	Key   func(ctx context.Context) (string, error)
	// Rate counts a create from a client address against the playground's
	// rate limit, answering 429 (with Retry-After on w) when it is spent.
	Rate func(w http.ResponseWriter, r *http.Request) error
}

// session is a live demo sandbox.
type session struct {
	tokenHash [32]byte
	expires   time.Time
}

// Service serves /v1/demo/*.
type Service struct {
	d        Deps
	mu       sync.Mutex
	sessions map[string]session // sandbox id → session
}

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Log == nil || d.Now == nil || d.Serve == nil || d.Key == nil || d.Rate == nil {
		return nil, errors.New("demo: a dependency is missing")
	}
	return &Service{d: d, sessions: map[string]session{}}, nil
}

// PlaygroundSandbox is POST /v1/demo/sandboxes's answer.
type PlaygroundSandbox struct {
	SessionID string    `json:"session_id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PlaygroundExecRequest is POST /v1/demo/sandboxes/{id}/exec's body.
type PlaygroundExecRequest struct {
	Command string `json:"command"`
}

// PlaygroundExecResult is its answer.
type PlaygroundExecResult struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
}

var errAtCapacity = &api.Error{
	Status: http.StatusServiceUnavailable, Code: api.CodeServiceUnavailable,
	Message: fmt.Sprintf("the demo playground is at capacity (%d sandboxes at once)", MaxConcurrent),
	Hint:    "try again in a few minutes; demo sandboxes last 4 minutes",
}

var errNoSession = &api.Error{
	Status: http.StatusNotFound, Code: api.CodeNotFound,
	Message: "no such demo sandbox, or it expired",
	Hint:    "create one with POST /v1/demo/sandboxes and send its token as " + TokenHeader,
}

// call makes one in-process API call as the demo account.
func (s *Service) call(ctx context.Context, method, path string, body, out any) error {
	key, err := s.d.Key(ctx)
	if err != nil {
		return err
	}
	status, answer, err := apihttp.ServeInProcess(ctx, s.d.Serve, apihttp.InProcessCall{
		Method: method, Path: path, Body: body, Auth: "Bearer " + key, RemoteAddr: "127.0.0.1:0",
	})
	if err != nil {
		return err
	}
	if status >= 300 {
		if e := apihttp.AnswerError(status, answer); e != nil {
			return e
		}
		return fmt.Errorf("%s %s answered %d", method, path, status)
	}
	if out != nil && len(answer) > 0 {
		if err := json.Unmarshal(answer, out); err != nil {
			return fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return nil
}

// sweep forgets expired sessions (the reaper destroys their sandboxes);
// callers hold mu.
func (s *Service) sweep(now time.Time) {
	for id, se := range s.sessions {
		if !now.Before(se.expires) {
			delete(s.sessions, id)
		}
	}
}

// create serves POST /v1/demo/sandboxes.
func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Rate(w, r); err != nil {
		return err
	}
	now := s.d.Now()
	s.mu.Lock()
	s.sweep(now)
	if len(s.sessions) >= MaxConcurrent {
		s.mu.Unlock()
		return errAtCapacity
	}
	// Hold the slot while the sandbox is made.
	pending := "pending-" + randomToken()
	s.sessions[pending] = session{expires: now.Add(time.Minute)}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, pending)
		s.mu.Unlock()
	}()
	var sb api.Sandbox
	if err := s.call(r.Context(), http.MethodPost, "/v1/sandboxes", api.CreateSandboxRequest{LifetimeMinutes: int(Lifetime / time.Minute)}, &sb); err != nil {
		return fmt.Errorf("create demo sandbox: %w", err)
	}
	tok := randomToken()
	expires := now.Add(Lifetime)
	s.mu.Lock()
	s.sessions[sb.ID] = session{tokenHash: sha256.Sum256([]byte(tok)), expires: expires}
	s.mu.Unlock()
	s.d.Log.InfoContext(r.Context(), "demo sandbox created", "sandbox", sb.ID)
	httpx.WriteJSON(w, http.StatusCreated, PlaygroundSandbox{SessionID: sb.ID, Token: tok, ExpiresAt: expires.UTC()})
	return nil
}

// session checks r's token for the sandbox of its path.
func (s *Service) session(r *http.Request) (string, error) {
	id := r.PathValue("id")
	h := sha256.Sum256([]byte(r.Header.Get(TokenHeader)))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(s.d.Now())
	se, ok := s.sessions[id]
	if !ok || subtle.ConstantTimeCompare(se.tokenHash[:], h[:]) != 1 {
		return "", errNoSession
	}
	return id, nil
}

// exec serves POST /v1/demo/sandboxes/{id}/exec.
func (s *Service) exec(w http.ResponseWriter, r *http.Request) error {
	id, err := s.session(r)
	if err != nil {
		return err
	}
	var req PlaygroundExecRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	if req.Command == "" || len(req.Command) > MaxCommandLen {
		return httpx.Invalid("command", fmt.Sprintf("command must be 1 to %d bytes", MaxCommandLen), "")
	}
	var res api.ExecResult
	err = s.call(r.Context(), http.MethodPost, "/v1/sandboxes/"+url.PathEscape(id)+"/exec",
		api.ExecRequest{Command: req.Command, Timeout: int(ExecTimeout / time.Second), MaxOutputBytes: MaxOutputBytes}, &res)
	if err != nil {
		return err
	}
	out := PlaygroundExecResult{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Truncated: res.Truncated}
	// The cap holds whatever the sidecar kept.
	if len(out.Stdout) > MaxOutputBytes {
		out.Stdout, out.Truncated = out.Stdout[:MaxOutputBytes], true
	}
	if len(out.Stderr) > MaxOutputBytes {
		out.Stderr, out.Truncated = out.Stderr[:MaxOutputBytes], true
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// destroy serves DELETE /v1/demo/sandboxes/{id}.
func (s *Service) destroy(w http.ResponseWriter, r *http.Request) error {
	id, err := s.session(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
	if err := s.call(r.Context(), http.MethodDelete, "/v1/sandboxes/"+url.PathEscape(id), nil, nil); err != nil {
		return fmt.Errorf("destroy demo sandbox: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails on Linux (Go 1.24+ crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b)
}
