package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// writeEvents writes interpreter events as NDJSON lines, each flushed.
func writeEvents(w http.ResponseWriter, evs ...api.InterpreterEvent) {
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		w.Write(append(b, '\n'))
		w.(http.Flusher).Flush()
	}
}

// streamInterpreter starts a streamed interpreter run (Accept:
// application/x-ndjson) in sandbox id as account key; the run is given
// up after a minute (a stream held whole does not even send its headers).
func streamInterpreter(t *testing.T, e *env, key, id string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "POST", e.URL+sandboxPath(id, "/interpreter/exec"), strings.NewReader(`{"code":"print(k)"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", api.ContentTypeNDJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != api.ContentTypeNDJSON {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("interpreter exec: %d %s %s, want a stream", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return resp
}

// TestInterpreterStreamScrubbed: a streamed interpreter run of an account
// that scrubs output is scrubbed line by line, a secret split between two
// lines caught, the outcome's result and error too; and it still
// streams: the client has the first output while the code runs on.
func TestInterpreterStreamScrubbed(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Server.SetScrubIdle(time.Hour) // nothing goes out by the idle flush
	seen := make(chan struct{})
	e.Sidecar.Route("POST /interpreter/exec", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != api.ContentTypeNDJSON {
			t.Errorf("sidecar Accept %q, want the stream asked for", r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		writeEvents(w, api.InterpreterEvent{Stream: "stdout", Text: "first line\nkey AKIAIOSF"})
		select {
		case <-seen: // the client read the first line: the code runs on
		case <-r.Context().Done():
			return
		}
		result, traceback := "'"+ghToken+"'", "Traceback\nValueError: "+awsKey+"\n"
		writeEvents(w,
			api.InterpreterEvent{Stream: "stdout", Text: "ODNN7EXAMPLE done\n"},
			api.InterpreterEvent{Stream: "stderr", Text: "warning " + ghToken + "\n"},
			api.InterpreterEvent{End: &api.InterpreterExecResult{Result: &result, Error: &traceback}})
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp := streamInterpreter(t, e, e.KeyA, sb.ID)
	rd := bufio.NewReader(resp.Body)

	first := make(chan []byte, 1)
	go func() {
		line, _ := rd.ReadBytes('\n')
		first <- line
	}()
	var line []byte
	select {
	case line = <-first:
	case <-time.After(time.Minute):
		t.Fatal("no line while the code runs: the stream is held, not streamed")
	}
	close(seen)
	var ev api.InterpreterEvent
	mustUnmarshal(t, line, &ev)
	if ev.Stream != "stdout" || !strings.HasPrefix(ev.Text, "first line\n") || strings.Contains(ev.Text, "AKIA") {
		t.Fatalf("first line %s, want the first output without the key's start", line)
	}

	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	all := append(line, rest...)
	if strings.Contains(string(all), "AKIA") || strings.Contains(string(all), "ghp_") {
		t.Errorf("stream %s holds a secret", all)
	}
	var stdout, stderr strings.Builder
	var last api.InterpreterEvent
	sc := bufio.NewScanner(strings.NewReader(string(all)))
	for sc.Scan() {
		var ev api.InterpreterEvent
		mustUnmarshal(t, sc.Bytes(), &ev)
		switch ev.Stream {
		case "stdout":
			stdout.WriteString(ev.Text)
		case "stderr":
			stderr.WriteString(ev.Text)
		}
		last = ev
	}
	if want := "first line\nkey " + awsPlaced + " done\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	if want := "warning [REDACTED_GITHUB_TOKEN]\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if last.End == nil || last.End.Result == nil || *last.End.Result != "'[REDACTED_GITHUB_TOKEN]'" ||
		last.End.Error == nil || *last.End.Error != "Traceback\nValueError: "+awsPlaced+"\n" {
		t.Errorf("last line %+v, want the outcome scrubbed", last)
	}
}

// TestInterpreterStreamLineCap: a scrubbed stream holds one line at a time,
// and a line longer than a JSON answer's most (hold.InterpreterAnswer) is
// not held to its end: the client gets what came before it, then a failed
// line, and nothing after it.
func TestInterpreterStreamLineCap(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Sidecar.Route("POST /interpreter/exec", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		writeEvents(w,
			api.InterpreterEvent{Stream: "stdout", Text: "before\n"},
			api.InterpreterEvent{Stream: "stdout", Text: strings.Repeat("x", 4<<20)},
			api.InterpreterEvent{Stream: "stdout", Text: "after\n"},
			api.InterpreterEvent{End: &api.InterpreterExecResult{}})
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	body, err := io.ReadAll(streamInterpreter(t, e, e.KeyA, sb.ID).Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > 64<<10 {
		t.Fatalf("stream of %d bytes, want the long line dropped", len(body))
	}
	var evs []api.InterpreterEvent
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		var ev api.InterpreterEvent
		mustUnmarshal(t, sc.Bytes(), &ev)
		evs = append(evs, ev)
	}
	if len(evs) != 2 || evs[0].Text != "before\n" || evs[1].Failed == nil {
		t.Fatalf("stream %s, want the output before the long line, then a failed line, and nothing more", body)
	}
	f := evs[1].Failed
	if f.Code != api.CodeSandboxFailed || !strings.Contains(f.Message, "a line of more than 832 KiB") || f.Hint == "" {
		t.Errorf("failed line %+v, want sandbox_operation_failed naming the cap, with a hint", f)
	}
}
