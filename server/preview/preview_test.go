package preview

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestService(t *testing.T, base string) *Service {
	t.Helper()
	s, err := New(nil, nil, Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHostTarget(t *testing.T) {
	local := newTestService(t, "")
	public := newTestService(t, "https://preview.example.com")
	tests := []struct {
		s          *Service
		host, path string
		ok         bool
		id         string
		port       int
	}{
		{local, "8080-abc-123.localhost:8090", "/x%2Fy", true, "abc-123", 8080},
		{local, "8080-ABC.LOCALHOST.", "/", true, "abc", 8080},
		{local, "8080-abc.localhost.evil.com", "/", false, "", 0},
		{local, "49983-abc.localhost", "/", false, "", 0},
		{local, "localhost:8090", "/", false, "", 0},
		{local, "0-abc.localhost", "/", false, "", 0},
		{local, "99999-abc.localhost", "/", false, "", 0},
		{local, "x.8080-abc.localhost", "/", false, "", 0},
		{public, "3000-sb.preview.example.com", "/", true, "sb", 3000},
		{public, "3000-sb.localhost", "/", false, "", 0},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "http://x"+tt.path, nil)
		r.Host = tt.host
		got, ok := tt.s.hostTarget(r)
		if ok != tt.ok || got.sandboxID != tt.id || got.port != tt.port {
			t.Errorf("%s: %+v %v", tt.host, got, ok)
		}
		if ok && got.rest != tt.path {
			t.Errorf("%s: rest %q, want %q", tt.host, got.rest, tt.path)
		}
	}
}

func TestPathTarget(t *testing.T) {
	for path, want := range map[string]string{
		"/preview/sb/8080/":        "sb 8080 / /preview/sb/8080/",
		"/preview/sb/8080/a/b%2Fc": "sb 8080 /a/b%2Fc /preview/sb/8080/",
		"/preview/sb/8080":         "redirect",
		"/preview/sb/08080/":       "error",
		"/preview//8080/":          "error",
		"/preview/sb/notaport/x":   "error",
	} {
		r := httptest.NewRequest("GET", "http://x"+path, nil)
		tg, err := pathTarget(r)
		got := "error"
		switch {
		case err == errRedirectSlash:
			got = "redirect"
		case err == nil:
			got = strings.Join([]string{tg.sandboxID, itoa(tg.port), tg.rest, tg.cookiePath}, " ")
		}
		if got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestStripCookie(t *testing.T) {
	h := http.Header{"Cookie": {"a=1; boxkite_preview=secret; b=2", "boxkite_preview=x"}}
	stripCookie(h)
	if got := h.Values("Cookie"); len(got) != 1 || got[0] != "a=1; b=2" {
		t.Errorf("Cookie = %q", got)
	}
}

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(func() time.Time { return now })
	rec := &Record{SandboxID: "s", AccountID: "a"}
	for range 3 {
		if err := l.allow(rec, 3, 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.allow(rec, 3, 10); err == nil {
		t.Error("the fourth request in a minute passed a limit of 3")
	}
	if err := l.allow(&Record{SandboxID: "s2", AccountID: "a"}, 3, 4); err != nil {
		t.Errorf("another sandbox: %v", err)
	}
	if err := l.allow(&Record{SandboxID: "s3", AccountID: "a"}, 3, 4); err == nil {
		t.Error("the account's limit did not hold")
	}
	now = now.Add(time.Minute)
	if err := l.allow(rec, 3, 10); err != nil {
		t.Errorf("next minute: %v", err)
	}
}

// FuzzTargets: whatever the host and path, a target found names a port
// 1..65535 and a sandbox id without dots or slashes, and its rest is a
// path.
func FuzzTargets(f *testing.F) {
	f.Add("8080-abc.localhost:1", "/preview/sb/8080/x")
	f.Add("1-a.localhost", "/preview/a/1")
	f.Add("65535-z.LOCALHOST.", "/preview/../8080/")
	s, _ := New(nil, nil, Config{})
	f.Fuzz(func(t *testing.T, host, path string) {
		r, err := http.NewRequest("GET", "http://x/", nil)
		if err != nil {
			return
		}
		r.Host = host
		r.URL.Path = path
		for _, tg := range targets(s, r) {
			if tg.port < 1 || tg.port > 65535 || tg.sandboxID == "" || strings.ContainsAny(tg.sandboxID, "./?#") || !strings.HasPrefix(tg.rest, "/") {
				t.Fatalf("host %q path %q: %+v", host, path, tg)
			}
		}
	})
}

func targets(s *Service, r *http.Request) []target {
	var out []target
	if tg, ok := s.hostTarget(r); ok {
		out = append(out, tg)
	}
	if strings.HasPrefix(r.URL.Path, PathPrefix) {
		if tg, err := pathTarget(r); err == nil {
			out = append(out, tg)
		}
	}
	return out
}

// holdStore is a Store of one preview.
type holdStore struct {
	mu  sync.Mutex
	rec Record
}

func (h *holdStore) CreatePreview(context.Context, *Record) error { return nil }

func (h *holdStore) PreviewByTokenHash(_ context.Context, hash string) (*Record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hash != h.rec.TokenHash {
		return nil, ErrNotFound
	}
	r := h.rec
	return &r, nil
}

func (h *holdStore) Previews(context.Context, string, string) ([]*Record, error) { return nil, nil }

func (h *holdStore) RevokePreviews(_ context.Context, _, _ string, _ int, t time.Time) ([]*Record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rec.RevokedAt = t
	r := h.rec
	return []*Record{&r}, nil
}

type holdCP struct{}

func (holdCP) Sidecar(context.Context, string, string) (http.RoundTripper, error) { return nil, nil }

func (holdCP) Audit(context.Context, string, string, string, map[string]any) error { return nil }

// TestHold: a request in flight (a WebSocket, a stream) ends at once when
// its preview is revoked here, and within recheckInterval when it expires.
func TestHold(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st := &holdStore{rec: Record{ID: "p1", AccountID: "a", SandboxID: "sb", Port: 8080, TokenHash: hashToken("tok"), ExpiresAt: now.Add(time.Minute)}}
	s, err := New(st, holdCP{}, Config{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.lookup(t.Context(), "tok")
	if err != nil || rec == nil {
		t.Fatalf("lookup: %v, %v", rec, err)
	}

	// Revoked here: at once.
	ctx, done := s.hold(t.Context(), rec, "tok")
	defer done()
	r := httptest.NewRequest("DELETE", "/v1/sandboxes/sb/preview/8080", nil)
	r.SetPathValue("port", "8080")
	if err := s.ServeRevoke(httptest.NewRecorder(), r, "a", "sb"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Error("a request in flight outlived its preview's revocation")
	}
	done()
	if len(s.open) != 0 {
		t.Errorf("requests still held after done: %v", s.open)
	}

	// Expired: within recheckInterval.
	st.mu.Lock()
	st.rec.RevokedAt = time.Time{}
	st.mu.Unlock()
	clear(s.cache)
	ctx, done2 := s.hold(t.Context(), rec, "tok")
	defer done2()
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	select {
	case <-ctx.Done():
	case <-time.After(recheckInterval + 30*time.Second):
		t.Error("a request in flight outlived its preview's expiry")
	}
}

// TestCreateRefusesReservedPorts: a preview of a port no app can serve on
// (E2B's, the egress proxy's) is refused at create with the port named,
// instead of a URL whose every request fails (3128: 403 from the sidecar).
func TestCreateRefusesReservedPorts(t *testing.T) {
	s, err := New(&holdStore{}, holdCP{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []string{"49983", "49999", "3128"} {
		r := httptest.NewRequest("POST", "/v1/sandboxes/sb/preview/"+port, strings.NewReader("{}"))
		r.SetPathValue("port", port)
		err := s.ServeCreate(httptest.NewRecorder(), r, "a", "sb")
		if err == nil || !strings.Contains(err.Error(), "port "+port) {
			t.Errorf("create a preview of port %s: %v, want refused naming the port", port, err)
		}
	}
}
