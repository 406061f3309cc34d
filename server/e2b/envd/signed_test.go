package envd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRunning is Sandboxes with n running sandboxes (sb0 … sb<n-1>), each
// with two keys, counting the lookups; Open answers ErrGone, so a URL that
// passes the signature check is answered 502.
type fakeRunning struct {
	mu      sync.Mutex
	all     []Running
	lookups []string // the sandboxID of each Running call
}

func newFakeRunning(n int) *fakeRunning {
	f := &fakeRunning{}
	for i := range n {
		f.all = append(f.all, Running{SandboxID: fmt.Sprintf("sb%d", i), KeyIDs: []string{
			fmt.Sprintf("6f1c0a3e-0000-4000-8000-%012d", 2*i), fmt.Sprintf("6f1c0a3e-0000-4000-8000-%012d", 2*i+1),
		}})
	}
	return f
}

func (f *fakeRunning) Open(context.Context, string, string) (Session, error) { return nil, ErrGone }

func (f *fakeRunning) Running(_ context.Context, id string) ([]Running, error) {
	f.mu.Lock()
	f.lookups = append(f.lookups, id)
	f.mu.Unlock()
	if id == "" {
		return f.all, nil
	}
	for _, sb := range f.all {
		if sb.SandboxID == id {
			return []Running{sb}, nil
		}
	}
	return nil, nil
}

func (f *fakeRunning) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lookups...)
}

// signedTestHandler is a Handler over f with a fixed clock and a limit
// of failures per source.
func signedTestHandler(f *fakeRunning, limit int, now *time.Time) *Handler {
	h := New(Options{
		Sandboxes: f, SignedURLFailures: limit,
		Tokens: NewTokens(func(context.Context) ([]byte, error) { return []byte(strings.Repeat("k", 32)), nil }),
	})
	h.now = func() time.Time { return *now }
	return h
}

// signedPath is a download URL of p signed with sandbox sb's key's token.
func signedPath(t testing.TB, h *Handler, sb Running, p, exp string) string {
	t.Helper()
	tok, err := h.tokens.Access(context.Background(), sb.SandboxID, sb.KeyIDs[1])
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{"path": {p}, "signature": {signature(p, "read", "", tok, exp)}}
	if exp != "" {
		q.Set("signature_expiration", exp)
	}
	return "/files?" + q.Encode()
}

type envelope struct{ Code, Message, Hint string }

func serveSigned(t *testing.T, h *Handler, host, remote, target string) (int, envelope, http.Header) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Host, r.RemoteAddr = host, remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var env envelope
	if w.Code != http.StatusBadGateway {
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
			t.Fatalf("%s: %d %q is not the error envelope", target, w.Code, w.Body)
		}
	}
	return w.Code, env, w.Header()
}

// TestSignedURLFailuresLimited: a source's signed URLs that no running
// sandbox signed are counted, and past the limit the next are refused
// with 429 before any sandbox is looked up; a signed URL that passes
// gives its unit back; IPv6 sources count by /64; a minute later the
// source may try again.
func TestSignedURLFailuresLimited(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	f := newFakeRunning(3)
	h := signedTestHandler(f, 3, &now)
	const host = "127.0.0.1:8090"
	forged := "/files?path=%2Fworkspace%2Fx&signature=v1_forged"
	good := signedPath(t, h, f.all[2], "/workspace/x", "")
	if code, _, _ := serveSigned(t, h, host, "192.0.2.1:1000", good); code != http.StatusBadGateway {
		t.Fatalf("a signed URL: %d, want 502 (signature accepted, the fake's sandbox gone)", code)
	}
	for i := range 3 {
		if code, env, _ := serveSigned(t, h, host, "192.0.2.1:1000", forged); code != http.StatusUnauthorized || !strings.Contains(env.Message, "invalid signature") || env.Hint == "" {
			t.Fatalf("forged %d: %d %+v, want 401 invalid signature with a hint", i, code, env)
		}
	}
	before := len(f.calls())
	code, env, hdr := serveSigned(t, h, host, "192.0.2.1:1000", forged)
	if code != http.StatusTooManyRequests || env.Code != "rate_limited" || env.Hint == "" || hdr.Get("Retry-After") == "" {
		t.Fatalf("past the limit: %d %+v Retry-After %q, want 429 rate_limited with a hint and Retry-After", code, env, hdr.Get("Retry-After"))
	}
	if code, _, _ := serveSigned(t, h, host, "192.0.2.1:1001", good); code != http.StatusTooManyRequests {
		t.Errorf("a good URL from the limited source: %d, want 429 (refused unchecked)", code)
	}
	if got := len(f.calls()); got != before {
		t.Errorf("%d lookups past the limit, want none", got-before)
	}
	if code, _, _ := serveSigned(t, h, host, "192.0.2.2:1000", forged); code != http.StatusUnauthorized {
		t.Errorf("another IPv4 source: %d, want 401", code)
	}

	for i := range 3 {
		serveSigned(t, h, host, fmt.Sprintf("[2001:db8:0:1::%x]:1000", i+1), forged)
	}
	if code, _, _ := serveSigned(t, h, host, "[2001:db8:0:1:ffff::9]:1000", forged); code != http.StatusTooManyRequests {
		t.Errorf("another address of the same IPv6 /64: %d, want 429", code)
	}
	if code, _, _ := serveSigned(t, h, host, "[2001:db8:0:2::1]:1000", forged); code != http.StatusUnauthorized {
		t.Errorf("another IPv6 /64: %d, want 401", code)
	}

	now = now.Add(time.Minute)
	if code, _, _ := serveSigned(t, h, host, "192.0.2.1:1000", forged); code != http.StatusUnauthorized {
		t.Errorf("a minute later: %d, want 401", code)
	}
}

// TestSignedURLHostNamesSandbox: on the sandbox's own host
// (49983-<id>.<domain>) a signed URL is checked against that sandbox only,
// with one lookup of it; another sandbox's signature there is refused.
func TestSignedURLHostNamesSandbox(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	f := newFakeRunning(3)
	h := signedTestHandler(f, 100, &now)
	good := signedPath(t, h, f.all[1], "/workspace/x", "")
	if code, _, _ := serveSigned(t, h, "49983-sb1.sandbox.example.com", "192.0.2.1:1000", good); code != http.StatusBadGateway {
		t.Errorf("sb1's URL on sb1's host: %d, want 502 (accepted)", code)
	}
	if code, _, _ := serveSigned(t, h, "49983-SB2.sandbox.example.com:443", "192.0.2.1:1000", good); code != http.StatusUnauthorized {
		t.Errorf("sb1's URL on sb2's host: %d, want 401", code)
	}
	if code, _, _ := serveSigned(t, h, "127.0.0.1:8090", "192.0.2.1:1000", good); code != http.StatusBadGateway {
		t.Errorf("sb1's URL on the shared host: %d, want 502 (accepted)", code)
	}
	if got, want := f.calls(), []string{"sb1", "sb2", ""}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lookups %q, want %q", got, want)
	}
}

// TestSignedURLExpired: an expired signature is refused saying so, before
// any sandbox is looked up; one that has not expired yet is accepted.
func TestSignedURLExpired(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	f := newFakeRunning(2)
	h := signedTestHandler(f, 100, &now)
	past := strconv.FormatInt(now.Unix()-1, 10)
	code, env, _ := serveSigned(t, h, "127.0.0.1:8090", "192.0.2.1:1", signedPath(t, h, f.all[0], "a.txt", past))
	if code != http.StatusUnauthorized || !strings.Contains(env.Message, "expired at 2027-01-15T07:59:59Z") || !strings.Contains(env.Hint, "useSignatureExpiration") {
		t.Errorf("expired: %d %+v, want 401 naming when it expired, with a hint", code, env)
	}
	if n := len(f.calls()); n != 0 {
		t.Errorf("%d lookups for an expired URL, want none", n)
	}
	future := strconv.FormatInt(now.Unix()+60, 10)
	if code, _, _ := serveSigned(t, h, "127.0.0.1:8090", "192.0.2.1:1", signedPath(t, h, f.all[0], "a.txt", future)); code != http.StatusBadGateway {
		t.Errorf("not yet expired: %d, want 502 (accepted)", code)
	}
}

func TestHostSandbox(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"49983-abc.example.com":     "abc",
		"49983-ABC.example.com:443": "abc",
		"49983-abc":                 "",
		"49999-abc.example.com":     "",
		"127.0.0.1:8090":            "",
		"[::1]:8090":                "",
		"49983-a.b.example.com":     "a",
		"49983-.example.com":        "",
		"49983-a_b.example.com":     "",
	} {
		if got := hostSandbox(host); got != want {
			t.Errorf("hostSandbox(%q) = %q, want %q", host, got, want)
		}
	}
}

// BenchmarkSignedURL is the cost of checking one signed URL that no
// sandbox signed, with n running sandboxes of two keys each: on the shared
// host (every sandbox tried) and on a sandbox's own host (one tried).
func BenchmarkSignedURL(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		for _, form := range []string{"shared", "host"} {
			b.Run(fmt.Sprintf("form=%s/sandboxes=%d", form, n), func(b *testing.B) {
				now := time.Unix(1_800_000_000, 0)
				f := newFakeRunning(n)
				h := signedTestHandler(f, 1<<30, &now) // never limited: the cost of a check
				host := "127.0.0.1:8090"
				if form == "host" {
					host = "49983-sb0.example.com"
				}
				r := httptest.NewRequest(http.MethodGet, "/files?path=%2Fworkspace%2Fx&signature=v1_forged", nil)
				r.Host = host
				for b.Loop() {
					if _, _, ok := h.signedURL(httptest.NewRecorder(), r); ok {
						b.Fatal("forged URL accepted")
					}
				}
			})
		}
	}
}
