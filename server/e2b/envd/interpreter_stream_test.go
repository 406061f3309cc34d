package envd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestExecuteStreamsOutput: /execute passes each piece of the sidecar's
// streamed output on as its own line while the cell runs (the outcome is
// sent only once the first line has arrived), stderr as stderr; scrubbed
// output is redacted even where a secret came in two pieces; the outcome's
// lines come last.
func TestExecuteStreamsOutput(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	sess := &interpSession{scrub: true, answer: func() (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ndjson}}, Body: pr}, nil
	}}
	srv := executeServer(t, sess)
	send := func(ev api.InterpreterEvent) {
		b, _ := json.Marshal(ev)
		if _, err := pw.Write(append(b, '\n')); err != nil {
			t.Errorf("send %+v: %v", ev, err)
		}
	}
	go send(api.InterpreterEvent{Stream: "stdout", Text: "first\n"})
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"code":"cell()"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	next := func() map[string]any {
		t.Helper()
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("read line: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		delete(m, "timestamp")
		return m
	}
	if got := next(); !cmp.Equal(got, map[string]any{"type": "stdout", "text": "first\n"}) {
		t.Fatalf("first line = %v, want the first stdout line while the cell runs", got)
	}
	go func() {
		send(api.InterpreterEvent{Stream: "stderr", Text: "key AKIAIOSFO"})
		send(api.InterpreterEvent{Stream: "stderr", Text: "DNN7EXAMPLE here\nand"})
		send(api.InterpreterEvent{Stream: "stdout", Text: "out\n"})
		send(api.InterpreterEvent{End: &api.InterpreterExecResult{Result: new("42")}})
		pw.Close()
	}()
	// The stderr pieces may come in more lines than they were sent in
	// (the redactor holds back what could be a secret's start): joined,
	// they are redacted, and come before the stdout line after them.
	var stderr strings.Builder
	var got []map[string]any
	for len(got) < 3 {
		m := next()
		if m["type"] == "stderr" && len(got) == 0 {
			stderr.WriteString(m["text"].(string))
			continue
		}
		got = append(got, m)
	}
	if stderr.String() != "key [REDACTED_AWS_KEY] here\nand" {
		t.Errorf("stderr = %q, want it whole, the key redacted though it came in two pieces", stderr.String())
	}
	want := []map[string]any{
		{"type": "stdout", "text": "out\n"},
		{"type": "result", "text": "42", "is_main_result": true},
		{"type": "number_of_executions", "execution_count": float64(1)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines after stderr (-want +got):\n%s", diff)
	}
}

// TestExecuteStreamFailed: an interpreter that fails mid-cell (a timeout,
// a crash) ends the answer with an error line after the output so far.
func TestExecuteStreamFailed(t *testing.T) {
	t.Parallel()
	body := `{"stream":"stdout","text":"a\n"}` + "\n" + `{"failed":{"code":"sandbox_failed","message":"interpreter failed: timed out after 5m0s","hint":"the interpreter was restarted; its variables are gone"}}` + "\n"
	sess := &interpSession{answer: func() (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ndjson}}, Body: io.NopCloser(strings.NewReader(body))}, nil
	}}
	srv := executeServer(t, sess)
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"code":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ls := lines(t, resp.Body)
	if len(ls) != 2 || ls[0]["text"] != "a\n" || ls[1]["type"] != "error" || !strings.Contains(ls[1]["value"].(string), "timed out") {
		t.Errorf("lines %v, want the output, then an error line with the failure", ls)
	}
}

// TestExecuteIdleFlush: scrubbed output whose end the redactor holds back
// (a word that could begin a secret: "loading") goes out once no more
// comes, while the cell still runs: the outcome is sent only after the
// client has it.
func TestExecuteIdleFlush(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	sess := &interpSession{scrub: true, answer: func() (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ndjson}}, Body: pr}, nil
	}}
	srv := executeServer(t, sess)
	go func() {
		b, _ := json.Marshal(api.InterpreterEvent{Stream: "stdout", Text: "loading"})
		_, _ = pw.Write(append(b, '\n'))
	}()
	// A hang guard only: without the flush the line never comes.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"code":"cell()"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	defer pw.Close()
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil || m["type"] != "stdout" || m["text"] != "loading" {
		t.Errorf("first line %s (%v), want the held-back word once the output paused", line, err)
	}
}

// TestExecuteHeadersWhileSilent: when the sidecar takes the cell at once
// and streams its answer, the headers go out before the cell prints
// anything. They waited for the first output line, so a silent cell
// (time.sleep) kept the SDK on requestTimeoutMs: runCode's timeoutMs did
// nothing, and a cell longer than 60 s was a TimeoutError.
func TestExecuteHeadersWhileSilent(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	sess := &interpSession{answer: func() (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ndjson}}, Body: pr}, nil
	}}
	srv := executeServer(t, sess)
	type got struct {
		resp *http.Response
		err  error
	}
	headers := make(chan got, 1)
	go func() {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"code":"import time; time.sleep(600)"}`))
		headers <- got{resp, err}
	}()
	end := func() {
		b, _ := json.Marshal(api.InterpreterEvent{End: &api.InterpreterExecResult{}})
		_, _ = pw.Write(append(b, '\n'))
		pw.Close()
	}
	var g got
	select {
	case g = <-headers:
	case <-time.After(20 * time.Second):
		end()
		t.Fatal("no headers while the cell runs silent: they wait for its first output")
	}
	end()
	if g.err != nil {
		t.Fatal(g.err)
	}
	defer g.resp.Body.Close()
	if g.resp.StatusCode != 200 || g.resp.Header.Get("Content-Type") != ndjson {
		t.Errorf("status %d, type %q; want 200 NDJSON", g.resp.StatusCode, g.resp.Header.Get("Content-Type"))
	}
}
