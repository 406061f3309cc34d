package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// execBody decodes an exec request. Its Timeout shadows the embedded
// api.ExecRequest.Timeout (encoding/json prefers the shallower field), so
// an explicit "timeout": 0, which is refused, is told apart from an absent
// one, which means the default.
type execBody struct {
	api.ExecRequest
	Timeout *int `json:"timeout"`
}

// execGrace is how much longer than the command's own timeout the server
// waits for the sidecar, which kills the command at the timeout and still
// has to answer.
const execGrace = 30 * time.Second

// execSandbox serves POST /v1/sandboxes/{id}/exec by proxying to the
// sidecar's /exec. With Accept: application/x-ndjson the sidecar streams
// events and they are passed on as they arrive.
func (s *Server) execSandbox(w http.ResponseWriter, r *http.Request) error {
	var body execBody
	if err := decodeJSON(w, r, &body, maxExecBody); err != nil {
		return err
	}
	req := body.ExecRequest
	if strings.TrimSpace(req.Command) == "" {
		return invalid("command", "command must not be empty", "")
	}
	req.Timeout = api.DefaultExecTimeout
	if body.Timeout != nil {
		req.Timeout = *body.Timeout
		if req.Timeout < 1 || req.Timeout > api.MaxExecTimeout {
			return invalid("timeout", fmt.Sprintf("timeout must be between 1 and %d seconds", api.MaxExecTimeout),
				fmt.Sprintf("omit timeout for the default of %d seconds", api.DefaultExecTimeout))
		}
	}
	sb, err := s.loadSandbox(r)
	if err != nil {
		return err
	}
	if !sb.Active() {
		return notActive(sb)
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode exec request: %w", err)
	}
	return s.proxy(w, r, sb, "/exec", payload, time.Duration(req.Timeout)*time.Second+execGrace)
}

// proxy POSTs body to the sandbox's sidecar at path and copies the answer
// back: status, content type and body, unchanged, so the sidecar's own
// error envelopes reach the client as they are. NDJSON bodies are flushed
// as each chunk arrives. timeout bounds the whole exchange; it is the only
// limit, so it must exceed whatever the sidecar may legitimately take.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, sb *Sandbox, path string, body []byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	client, err := s.sidecars.client(sb.ID, sb.Endpoint)
	if err != nil {
		s.log.ErrorContext(ctx, "sidecar client", "sandbox", sb.ID, "err", err)
		return sandboxFailed("reach")
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://sidecar"+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build sidecar request: %w", err)
	}
	up.Header.Set("Content-Type", "application/json")
	up.Header.Set("X-Sidecar-Auth-Token", sb.Endpoint.Token)
	if accept := r.Header.Get("Accept"); accept != "" {
		up.Header.Set("Accept", accept)
	}
	if ri := infoFrom(ctx); ri != nil {
		up.Header.Set("X-Request-ID", ri.id)
	}
	resp, err := client.Do(up)
	if err != nil {
		if r.Context().Err() != nil {
			return fmt.Errorf("client went away: %w", r.Context().Err())
		}
		s.log.ErrorContext(ctx, "sidecar request failed", "sandbox", sb.ID, "path", path, "err", err)
		return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "could not reach the sandbox's sidecar").
			WithHint("the sandbox may have stopped; check it with `boxkite session get` or create a new one")
	}
	defer resp.Body.Close()

	streaming := strings.HasPrefix(resp.Header.Get("Content-Type"), api.ContentTypeNDJSON)
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if streaming {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no") // tell reverse proxies in front not to buffer
	}
	w.WriteHeader(resp.StatusCode)
	if !streaming {
		if _, err := io.Copy(w, resp.Body); err != nil {
			return fmt.Errorf("copy sidecar response: %w", err)
		}
		return nil
	}
	rc := http.NewResponseController(w)
	_ = rc.Flush() // send the headers now: the first event may take a while
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return fmt.Errorf("write stream: %w", err)
			}
			if err := rc.Flush(); err != nil {
				return fmt.Errorf("flush stream: %w", err)
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("read sidecar stream: %w", rerr)
		}
	}
}

// sidecarClients caches one HTTP client per sandbox, so requests reuse
// connections to the sidecar (a unix socket dial per exec would cost more
// than the exec itself).
type sidecarClients struct {
	mu sync.Mutex
	m  map[string]*sidecarClient
}

type sidecarClient struct {
	ep     Endpoint
	client *http.Client
}

func newSidecarClients() *sidecarClients { return &sidecarClients{m: map[string]*sidecarClient{}} }

// client returns the cached client for the sandbox, building one if the
// endpoint is new or changed.
func (c *sidecarClients) client(id string, ep Endpoint) (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.m[id]; ok && sc.ep.Network == ep.Network && sc.ep.Address == ep.Address {
		return sc.client, nil
	}
	tr, err := sidecarTransport(ep)
	if err != nil {
		return nil, err
	}
	if old, ok := c.m[id]; ok {
		old.client.CloseIdleConnections()
	}
	// No Client.Timeout: every request carries a context deadline sized to
	// the operation (an exec may legitimately run for an hour).
	sc := &sidecarClient{ep: ep, client: &http.Client{Transport: tr}}
	c.m[id] = sc
	return sc.client, nil
}

// forget drops the sandbox's client and closes its idle connections.
func (c *sidecarClients) forget(id string) {
	c.mu.Lock()
	sc, ok := c.m[id]
	delete(c.m, id)
	c.mu.Unlock()
	if ok {
		sc.client.CloseIdleConnections()
	}
}

// sidecarTransport dials the endpoint whatever host the request URL names.
// "tcp" is plain HTTP for now (tests use it); the kube driver will bring
// TLS pinned to Endpoint.CertPEM, and refusing a certificate we cannot yet
// pin keeps us from silently talking plain text to such a sidecar.
func sidecarTransport(ep Endpoint) (*http.Transport, error) {
	switch ep.Network {
	case "unix", "tcp":
	default:
		return nil, fmt.Errorf("sidecar endpoint network %q is not supported", ep.Network)
	}
	if ep.Address == "" {
		return nil, errors.New("sidecar endpoint has no address")
	}
	if len(ep.CertPEM) > 0 {
		return nil, errors.New("sidecar endpoints with a pinned certificate are not supported yet")
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, ep.Network, ep.Address)
		},
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		// Sidecar output is sent as it is produced; gzip would hold it back.
		DisableCompression: true,
	}, nil
}
