package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// streamExec starts a streamed exec and returns its events as they come;
// the channel closes at the end of the answer.
func streamExec(t *testing.T, ctx context.Context, url, code string) <-chan api.InterpreterEvent {
	t.Helper()
	body, _ := json.Marshal(api.InterpreterExecRequest{Code: code, Timeout: 120})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/interpreter/exec", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, testToken)
	req.Header.Set("Accept", ndjson)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ndjson {
		resp.Body.Close()
		t.Fatalf("streamed exec: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan api.InterpreterEvent, 16)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev api.InterpreterEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("line %q: %v", sc.Text(), err)
				return
			}
			events <- ev
		}
	}()
	return events
}

// TestInterpreterStreamsOutput: a streamed exec's output comes while the
// code runs (the code waits for a file the test makes only once it has
// the first line), stdout and stderr apart and in order, then the outcome.
func TestInterpreterStreamsOutput(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	url, _ := newToolServer(t, Options{Workspace: ws})
	code := "import os, sys, time\nprint('first')\nwhile not os.path.exists('go-on'): time.sleep(0.02)\n" +
		"print('err', file=sys.stderr)\nos.system('echo shell')\nprint('last')\n6 * 7"
	events := streamExec(t, t.Context(), url, code)
	if ev := <-events; ev != (api.InterpreterEvent{Stream: "stdout", Text: "first\n"}) {
		t.Fatalf("first event = %+v, want the first line while the code runs", ev)
	}
	if err := os.WriteFile(filepath.Join(ws, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Pieces of one stream written close together may come as one event:
	// consecutive ones are joined.
	var got []api.InterpreterEvent
	for ev := range events {
		if n := len(got); n > 0 && ev.Stream != "" && got[n-1].Stream == ev.Stream {
			got[n-1].Text += ev.Text
			continue
		}
		got = append(got, ev)
	}
	want := []api.InterpreterEvent{
		{Stream: "stderr", Text: "err\n"},
		{Stream: "stdout", Text: "shell\nlast\n"},
		{End: &api.InterpreterExecResult{Result: strPtr("42")}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events after the first (-want +got):\n%s", diff)
	}
}

// TestInterpreterInterruptKeepsState: a client that goes away mid-cell
// interrupts the code (KeyboardInterrupt), and the interpreter keeps its
// variables for the next request.
func TestInterpreterInterruptKeepsState(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	interpExec(t, url, "x = 41", 0, http.StatusOK)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	code := "import time\ntry:\n    print('sleeping', flush=True)\n    time.sleep(600)\nexcept KeyboardInterrupt:\n    interrupted = True\n    raise"
	events := streamExec(t, ctx, url, code)
	if ev := <-events; ev.Text != "sleeping\n" {
		t.Fatalf("first event = %+v, want the line before the sleep", ev)
	}
	cancel()
	for range events {
		// the rest of the answer: the interrupted cell's outcome
	}
	got := interpExec(t, url, "(x, interrupted)", 0, http.StatusOK)
	if got.Result == nil || *got.Result != "(41, True)" {
		t.Errorf("after the interrupt: %v (error %v), want (41, True): the cell interrupted, the variables kept", got.Result, got.Error)
	}
}

// TestInterpreterStreamFailure: a cell that outlives its timeout ends a
// streamed answer with a failed line (the interpreter is killed).
func TestInterpreterStreamFailure(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	body, _ := json.Marshal(api.InterpreterExecRequest{Code: "print('a', flush=True)\nwhile True: pass", Timeout: 1})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/interpreter/exec", strings.NewReader(string(body)))
	req.Header.Set(api.HeaderSidecarToken, testToken)
	req.Header.Set("Accept", ndjson)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var last api.InterpreterEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		last = api.InterpreterEvent{}
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatal(err)
		}
	}
	if last.Failed == nil || last.Failed.Code != api.CodeSandboxFailed || !strings.Contains(last.Failed.Message, "timed out") {
		t.Errorf("last line = %+v, want a failed line for the timeout", last)
	}
}
