package apihttp

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// answer reads one response from conn and decodes its error envelope.
func answer(t *testing.T, conn net.Conn) (*http.Response, *api.Error) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	var env api.ErrorEnvelope
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
		t.Fatalf("%d %s: not an error envelope: %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if env.Error.RequestID == "" || env.Error.RequestID != resp.Header.Get("X-Request-ID") {
		t.Errorf("request_id %q, X-Request-ID %q", env.Error.RequestID, resp.Header.Get("X-Request-ID"))
	}
	return resp, env.Error
}

// serve runs a server from NewServer on ln; the handler answers 204.
func serve(t *testing.T, ln net.Listener) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tls" && r.TLS == nil {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	hs := NewServer(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
}

// TestListenerStackRefusals: net/http's own refusals come out as the
// envelope; a handler's answers are left alone.
func TestListenerStackRefusals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, Listener(ln))
	tests := []struct {
		name     string
		wire     string
		status   int
		code     string
		inReason string
	}{
		{"header block too large", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", MaxHeaderBytes+8<<10) + "\r\n\r\n", 431, api.CodeHeadersTooLarge, ""},
		{"garbage", "\x16\x03\x01\x00\xa5\x01\n\r\n\r\n", 400, api.CodeBadRequest, ""},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400, api.CodeBadRequest, "missing required Host header"},
		{"unknown transfer coding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: rot13\r\n\r\n", 501, api.CodeNotSupported, ""},
		{"unknown version", "GET / HTTP/9.9\r\nHost: x\r\n\r\n", 505, api.CodeNotSupported, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			go func() { _, _ = io.WriteString(conn, tt.wire) }()
			resp, e := answer(t, conn)
			if resp.StatusCode != tt.status || e.Code != tt.code || e.Hint == "" || !strings.Contains(e.Message, tt.inReason) {
				t.Errorf("%d %+v, want %d %s with %q", resp.StatusCode, e, tt.status, tt.code, tt.inReason)
			}
		})
	}
	// A handler's answer passes through untouched.
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("handler answer = %d, want 204", resp.StatusCode)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLSListener: requests over TLS are served with Request.TLS set,
// refusals inside TLS are envelopes, and plain HTTP on the TLS port gets
// the envelope in plain HTTP.
func TestTLSListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, TLSListener(ln, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, MinVersion: tls.VersionTLS13}))
	clientTLS := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a test's own self-signed certificate

	c := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}}
	resp, err := c.Get("https://" + ln.Addr().String() + "/tls")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("GET /tls over TLS = %d, want 204 (Request.TLS set)", resp.StatusCode)
	}

	tc, err := tls.Dial("tcp", ln.Addr().String(), clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.WriteString(tc, "GET / HTTP/1.1\r\n\r\n") }()
	if resp, e := answer(t, tc); resp.StatusCode != 400 || e.Code != api.CodeBadRequest {
		t.Errorf("no Host inside TLS: %d %+v", resp.StatusCode, e)
	}
	tc.Close()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() { _, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") }()
	if resp, e := answer(t, conn); resp.StatusCode != 400 || e.Code != api.CodeBadRequest || !strings.Contains(e.Hint, "https") {
		t.Errorf("plain HTTP on the TLS port: %d %+v", resp.StatusCode, e)
	}
}

// FuzzStackRefusal: the recogniser never panics, and never takes a
// response net/http writes for a handler (which always has Date) for one
// of its own refusals.
func FuzzStackRefusal(f *testing.F) {
	f.Add([]byte("HTTP/1.1 431 Request Header Fields Too Large" + stackErrorHeaders + "431 Request Header Fields Too Large"))
	f.Add([]byte("HTTP/1.1 400 Bad Request: missing required Host header" + stackErrorHeaders + "400 Bad Request: missing required Host header"))
	f.Add([]byte("HTTP/1.1 400 Bad Request\r\nDate: x" + stackErrorHeaders))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, p []byte) {
		status, _, ok := stackRefusal(p)
		if !ok {
			return
		}
		if status < 400 || status > 599 {
			t.Fatalf("status %d from %q", status, p)
		}
		head, _, _ := strings.Cut(string(p), "\r\n\r\n")
		if strings.Contains(head, "\r\nDate:") {
			t.Fatalf("took a handler's response for a refusal: %q", p)
		}
	})
}

func TestMethodNotAllowed(t *testing.T) {
	mux := http.NewServeMux()
	ok := func(http.ResponseWriter, *http.Request) {}
	mux.HandleFunc("GET /items/{id}", ok)
	mux.HandleFunc("DELETE /items/{id}", ok)
	mux.HandleFunc("POST /run", ok)
	mux.HandleFunc("/", ok)
	tests := []struct {
		method, path, wantAllow string
	}{
		{"POST", "/items/7", "GET, HEAD, DELETE"},
		{"GET", "/run", "POST"},
		{"GET", "/nothing", ""},
	}
	for _, tt := range tests {
		w := &recorder{h: http.Header{}}
		r, _ := http.NewRequest(tt.method, "http://x"+tt.path, nil)
		e := MethodNotAllowed(w, r, mux, "/")
		if tt.wantAllow == "" {
			if e != nil {
				t.Errorf("%s %s: %v, want nil (a 404)", tt.method, tt.path, e)
			}
			continue
		}
		if e == nil || e.Status != http.StatusMethodNotAllowed || e.Code != api.CodeMethodNotAllowed || w.h.Get("Allow") != tt.wantAllow {
			t.Errorf("%s %s: %+v Allow %q, want 405 with Allow %q", tt.method, tt.path, e, w.h.Get("Allow"), tt.wantAllow)
		}
	}
}

type recorder struct{ h http.Header }

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(p []byte) (int, error) { return len(p), nil }
func (r *recorder) WriteHeader(int)             {}
