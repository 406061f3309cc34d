package apihttp

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestServeInProcess: the request carries the JSON body, credential and
// client address; the answer's status defaults to 200; an answer past
// MaxAnswer fails the handler's write; AnswerError reads the envelope.
func TestServeInProcess(t *testing.T) {
	var seen struct{ method, path, ctype, auth, remote, host, body string }
	var writeErr error
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.method, seen.path, seen.ctype, seen.auth = r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization")
		seen.remote, seen.host, seen.body = r.RemoteAddr, r.Host, string(b)
		switch r.URL.Path {
		case "/big":
			_, writeErr = w.Write([]byte(strings.Repeat("x", 11)))
		case "/refused":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"code":"conflict","message":"taken"}}`))
		default:
			_, _ = w.Write([]byte(`{"ok":true}`))
		}
	})
	status, body, err := ServeInProcess(t.Context(), h, InProcessCall{
		Method: http.MethodPost, Path: "/v1/x", Body: map[string]int{"a": 1}, Auth: "Bearer k", RemoteAddr: "10.0.0.1:5", Host: "h",
	})
	if err != nil || status != http.StatusOK || string(body) != `{"ok":true}` {
		t.Errorf("POST /v1/x = %d %q %v; want 200 {\"ok\":true}", status, body, err)
	}
	want := struct{ method, path, ctype, auth, remote, host, body string }{"POST", "/v1/x", "application/json", "Bearer k", "10.0.0.1:5", "h", `{"a":1}`}
	if seen != want {
		t.Errorf("the handler saw %+v, want %+v", seen, want)
	}
	if _, _, err := ServeInProcess(t.Context(), h, InProcessCall{Method: http.MethodGet, Path: "/big", MaxAnswer: 10}); err != nil || !errors.Is(writeErr, ErrAnswerTooLarge) {
		t.Errorf("an answer past MaxAnswer: err %v, the handler's write %v; want ErrAnswerTooLarge for the write", err, writeErr)
	}
	if seen.ctype != "" || seen.auth != "" {
		t.Errorf("a call without body or auth sent Content-Type %q, Authorization %q", seen.ctype, seen.auth)
	}
	status, body, _ = ServeInProcess(t.Context(), h, InProcessCall{Method: http.MethodGet, Path: "/refused"})
	if diff := cmp.Diff(&api.Error{Status: http.StatusConflict, Code: "conflict", Message: "taken"}, AnswerError(status, body)); diff != "" {
		t.Errorf("AnswerError (-want +got):\n%s", diff)
	}
	if e := AnswerError(http.StatusBadGateway, []byte("<html>")); e != nil {
		t.Errorf("AnswerError of a body that is no envelope = %v, want nil", e)
	}
}
