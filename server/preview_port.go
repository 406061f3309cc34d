package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/preview"
	"github.com/boxkite/boxkite/server/sandbox"
)

// newPreviews returns the preview service when the store keeps previews.
func (s *Server) newPreviews() error {
	// Previews are not model.Store's: the SQL store behind the
	// authorization layer keeps them, every query scoped by account but
	// the token's own look-up, which is what authenticates a visit.
	var st any = s.store
	if w, ok := st.(interface{ Unwrap() model.Store }); ok {
		st = w.Unwrap()
	}
	ps, ok := st.(preview.Store)
	if !ok {
		return nil
	}
	p, err := preview.New(ps, previewPort{s}, preview.Config{BaseURL: s.cfg.PreviewBaseURL, Log: s.log, Now: func() time.Time { return s.now() }})
	if err != nil {
		return err
	}
	s.preview = p
	return nil
}

// previewPort is the control plane as server/preview consumes it.
type previewPort struct{ s *Server }

func (p previewPort) Sidecar(ctx context.Context, accountID, sandboxID string) (http.RoundTripper, error) {
	sb, err := p.s.sandboxes.Find(ctx, accountID, sandboxID)
	if err != nil {
		return nil, err
	}
	if !sb.Active() {
		return nil, sandbox.NotActive(sb)
	}
	if err := p.s.sandboxes.FrozenAnswer(sb.ID); err != nil {
		return nil, err
	}
	c, err := p.s.sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("sidecar client: %w", err)
	}
	return sidecarAuth{c.Transport, sb.Endpoint.Token}, nil
}

func (p previewPort) Audit(ctx context.Context, accountID, sandboxID, operation string, detail map[string]any) error {
	sb, err := p.s.store.Sandbox(ctx, accountID, sandboxID)
	if err != nil {
		return fmt.Errorf("load sandbox: %w", err)
	}
	return p.s.audit(ctx, audit.Record{Sandbox: sb, Operation: operation, Detail: detail, Started: p.s.now()})
}

// sidecarAuth sets a sandbox's sidecar token on each request.
type sidecarAuth struct {
	rt    http.RoundTripper
	token string
}

func (a sidecarAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Sidecar-Auth-Token", a.token)
	return a.rt.RoundTrip(r)
}
