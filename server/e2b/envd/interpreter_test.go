package envd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// interpSession is a Session whose sidecar answers /interpreter/exec with
// answer once release is closed (at once when it is nil).
type interpSession struct {
	Session
	release chan struct{}
	answer  func() (*http.Response, error)
	scrub   bool
	body    []byte // the last request's body
	reserve func() (func(), error)
}

func (s *interpSession) SandboxID() string                       { return "sb" }
func (s *interpSession) Env() map[string]string                  { return nil }
func (s *interpSession) CheckCode(context.Context, string) error { return nil }
func (s *interpSession) ScrubOutput() bool                       { return s.scrub }
func (s *interpSession) Audit(context.Context, AuditEntry) error { return nil }
func (s *interpSession) ReserveInterpreter() (func(), error) {
	if s.reserve != nil {
		return s.reserve()
	}
	return func() {}, nil
}

func (s *interpSession) Sidecar(ctx context.Context, _, _ string, _ url.Values, body io.Reader, _ http.Header) (*http.Response, error) {
	if body != nil {
		s.body, _ = io.ReadAll(body)
	}
	if s.release != nil {
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.answer()
}

func jsonResponse(status int, v any) func() (*http.Response, error) {
	return func() (*http.Response, error) {
		b, _ := json.Marshal(v)
		return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(string(b))), Header: http.Header{}}, nil
	}
}

func executeServer(t *testing.T, sess Session) *httptest.Server {
	t.Helper()
	h := &Handler{contexts: newContextTable(), log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.execute(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// lines reads an /execute answer's NDJSON lines.
func lines(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestExecuteHeadersBeforeResult: the SDK's requestTimeoutMs runs until
// the headers arrive and its timeoutMs only after, so a cell still
// running gets its headers before its result: without it every cell
// longer than 60 s was a TimeoutError and timeoutMs did nothing.
func TestExecuteHeadersBeforeResult(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	sess := &interpSession{release: release, answer: jsonResponse(200, api.InterpreterExecResult{Stdout: "done\n"})}
	srv := executeServer(t, sess)
	type got struct {
		resp *http.Response
		err  error
	}
	headers := make(chan got, 1)
	go func() {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"code":"slow()"}`))
		headers <- got{resp, err}
	}()
	var g got
	select {
	case g = <-headers:
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("no headers while the cell runs: they wait for the result")
	}
	close(release)
	if g.err != nil {
		t.Fatal(g.err)
	}
	defer g.resp.Body.Close()
	if g.resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", g.resp.StatusCode)
	}
	ls := lines(t, g.resp.Body)
	if len(ls) == 0 || ls[0]["type"] != "stdout" || ls[0]["text"] != "done\n" {
		t.Errorf("lines %v, want the cell's stdout first", ls)
	}
}

// TestExecuteErrors: a refusal that comes at once keeps its status (the
// SDK's RateLimitError, NotFoundError); one after the headers went out is
// an error line the SDK reads as execution.error.
func TestExecuteErrors(t *testing.T) {
	t.Parallel()
	refusal := jsonResponse(http.StatusTooManyRequests, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeRateLimited, Message: "too many commands at once"}})
	t.Run("at once", func(t *testing.T) {
		t.Parallel()
		srv := executeServer(t, &interpSession{answer: refusal})
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"code":"1"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("status %d, want 429", resp.StatusCode)
		}
	})
	t.Run("after the headers", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := executeServer(t, &interpSession{release: release, answer: refusal})
		// The refusal comes once the headers are out (or, when they
		// wait for the result, after 20 s, and the test fails).
		stop := time.AfterFunc(20*time.Second, func() { close(release) })
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"code":"1"}`))
		if stop.Stop() {
			close(release)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		ls := lines(t, resp.Body)
		if resp.StatusCode != 200 || len(ls) != 1 || ls[0]["type"] != "error" || !strings.Contains(ls[0]["value"].(string), "too many commands") {
			t.Errorf("status %d, lines %v; want 200 and one error line with the refusal", resp.StatusCode, ls)
		}
	})
}

// TestExecuteEmptyCell: runCode of empty code (or a blank cell) is an empty
// execution, as Jupyter runs an empty cell on E2B; the sidecar refuses
// empty code, which the SDK showed as "SandboxError: 400 Bad Request".
func TestExecuteEmptyCell(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"", "  \n\t\n"} {
		sess := &interpSession{}
		sess.answer = func() (*http.Response, error) { // the sidecar's check
			var req api.InterpreterExecRequest
			if err := json.Unmarshal(sess.body, &req); err != nil || strings.TrimSpace(req.Code) == "" {
				return jsonResponse(http.StatusBadRequest, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeValidation, Message: "code must not be empty"}})()
			}
			return jsonResponse(200, api.InterpreterExecResult{})()
		}
		srv := executeServer(t, sess)
		body, _ := json.Marshal(map[string]string{"code": code})
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		ls := lines(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(ls) != 1 || ls[0]["type"] != "number_of_executions" {
			t.Errorf("code %q: status %d, lines %v; want 200 and an empty execution", code, resp.StatusCode, ls)
		}
	}
}

// TestExecuteReservesHeldOutput: a cell reserves its held outcome before
// it is sent: refused (the server's held-output budget is spent), the
// call answers the refusal's status with its message and hint and the
// sidecar never sees the cell; a cell that ran gives its reservation back
// once its answer ended.
func TestExecuteReservesHeldOutput(t *testing.T) {
	t.Parallel()
	refusal := &api.Error{Status: http.StatusTooManyRequests, Code: api.CodeLimitExceeded, Message: "code cell refused: held", Hint: "retry later"}
	sess := &interpSession{answer: jsonResponse(200, api.InterpreterExecResult{Stdout: "ran\n"})}
	sess.reserve = func() (func(), error) { return nil, refusal }
	srv := executeServer(t, sess)
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"code":"open('/tmp/x', 'w')"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Code    int
		Message string
	}
	_ = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || got.Code != http.StatusTooManyRequests || got.Message != "code cell refused: held (retry later)" {
		t.Errorf("refused cell: %d %+v", resp.StatusCode, got)
	}
	if sess.body != nil {
		t.Errorf("the sidecar was sent the refused cell: %s", sess.body)
	}

	released := make(chan struct{}, 2)
	sess.reserve = func() (func(), error) { return func() { released <- struct{}{} }, nil }
	resp, err = http.Post(srv.URL, "application/json", strings.NewReader(`{"code":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	ls := lines(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(ls) == 0 || ls[0]["text"] != "ran\n" {
		t.Errorf("admitted cell: %d %v", resp.StatusCode, ls)
	}
	select {
	case <-released:
	case <-time.After(20 * time.Second):
		t.Fatal("the admitted cell's reservation was never given back")
	}
	if len(released) != 0 {
		t.Error("the reservation was given back twice")
	}
}
