package server_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// Secrets of the scrubbing tests (issue 17, finding 4): an AWS key id and a
// GitHub token, and the placeholders tools.Redact puts in their place.
const (
	awsKey    = "AKIAIOSFODNN7EXAMPLE"
	ghToken   = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	awsPlaced = "[REDACTED_AWS_KEY]"
)

func replyJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// TestExecOutputScrubbed: the exec result's stdout and stderr come back
// scrubbed, and the audit entry keeps neither the secret typed into the
// command nor says nothing about it.
func TestExecOutputScrubbed(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, req api.ExecRequest) {
		replyJSON(w, api.ExecResult{Stdout: "key " + awsKey + "\n", Stderr: "token " + ghToken + "\n"})
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	command := "export GITHUB_TOKEN=" + ghToken + "; ./deploy"
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: command})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	var res api.ExecResult
	mustUnmarshal(t, body, &res)
	if res.Stdout != "key "+awsPlaced+"\n" || res.Stderr != "token [REDACTED_GITHUB_TOKEN]\n" {
		t.Errorf("result stdout %q, stderr %q; want both scrubbed", res.Stdout, res.Stderr)
	}
	// The sidecar was given the command as typed: scrubbing is about what
	// is shown and kept, not what runs.
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 1 || reqs[0].Command != command {
		t.Errorf("sidecar got %+v, want the command unchanged", reqs)
	}
	entry := lastLogEntry(t, e, sb.ID)
	if strings.Contains(string(entry.Detail), ghToken) {
		t.Errorf("audit detail holds the token: %s", entry.Detail)
	}
	var d map[string]any
	mustUnmarshal(t, entry.Detail, &d)
	if d["command"] != "export GITHUB_TOKEN=[REDACTED_GITHUB_TOKEN]; ./deploy" || d["redacted"] != true || d["output_redacted"] != true {
		t.Errorf("audit detail %s: want the command scrubbed, redacted and output_redacted true", entry.Detail)
	}
}

// writeExecEvents answers a streamed exec with evs, each flushed.
func writeExecEvents(w http.ResponseWriter, evs ...api.ExecEvent) {
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		w.Write(append(b, '\n'))
		w.(http.Flusher).Flush()
	}
}

func lastLogEntry(t *testing.T, e *env, id string) api.LogEntry {
	t.Helper()
	resp, body := e.do("GET", sandboxPath(id, "/log?limit=100"), e.KeyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("log: %d %s", resp.StatusCode, body)
	}
	var page api.LogPage
	mustUnmarshal(t, body, &page)
	if len(page.Entries) == 0 {
		t.Fatal("no audit entries")
	}
	return page.Entries[len(page.Entries)-1]
}

// TestExecStreamScrubbed: a secret split between two NDJSON events of a
// streamed exec is caught; the exit event still ends the stream.
func TestExecStreamScrubbed(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Server.SetScrubIdle(time.Hour) // no idle flush between the two halves
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		writeExecEvents(w,
			api.ExecEvent{Type: api.EventStdout, Data: "first line\nkey AKIAIOSF"},
			api.ExecEvent{Type: api.EventStderr, Data: "warning\n"},
			api.ExecEvent{Type: api.EventStdout, Data: "ODNN7EXAMPLE done\n"},
			api.ExecEvent{Type: api.EventExit, ExitCode: 3})
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "./print-key"},
		"Accept", api.ContentTypeNDJSON)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	var stdout, stderr strings.Builder
	var last api.ExecEvent
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		var ev api.ExecEvent
		mustUnmarshal(t, sc.Bytes(), &ev)
		switch ev.Type {
		case api.EventStdout:
			stdout.WriteString(ev.Data)
		case api.EventStderr:
			stderr.WriteString(ev.Data)
		}
		last = ev
	}
	if want := "first line\nkey " + awsPlaced + " done\n"; stdout.String() != want || stderr.String() != "warning\n" {
		t.Errorf("stdout %q, stderr %q; want %q and the warning", stdout.String(), stderr.String(), want)
	}
	if last.Type != api.EventExit || last.ExitCode != 3 {
		t.Errorf("last event %+v, want the exit event", last)
	}
	var d map[string]any
	mustUnmarshal(t, lastLogEntry(t, e, sb.ID).Detail, &d)
	if d["output_redacted"] != true {
		t.Errorf("audit detail %v lacks output_redacted", d)
	}
}

// TestExecStreamIdleFlush: output held back as a possible secret's start
// (a password prompt) still reaches the client while the command waits:
// the sidecar sends the rest only after the client has seen the prompt.
func TestExecStreamIdleFlush(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Server.SetScrubIdle(10 * time.Millisecond)
	seen := make(chan struct{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		b, _ := json.Marshal(api.ExecEvent{Type: api.EventStdout, Data: "Password: "})
		w.Write(append(b, '\n'))
		w.(http.Flusher).Flush()
		select {
		case <-seen:
		case <-r.Context().Done():
			return
		}
		w.Write([]byte(`{"type":"exit","exit_code":0,"duration_ms":1}` + "\n"))
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	req, _ := http.NewRequest("POST", e.URL+sandboxPath(sb.ID, "/exec"), strings.NewReader(`{"command":"login"}`))
	req.Header.Set("Authorization", "Bearer "+e.KeyA)
	req.Header.Set("Accept", api.ContentTypeNDJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadBytes('\n')
	if err != nil {
		t.Fatalf("first event: %v", err)
	}
	var ev api.ExecEvent
	mustUnmarshal(t, line, &ev)
	if ev.Type != api.EventStdout || ev.Data != "Password: " {
		t.Fatalf("first event %+v, want the prompt", ev)
	}
	close(seen)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), `"type":"exit"`) {
		t.Errorf("stream ended with %q, want the exit event", rest)
	}
}

// TestOutputScrubbingOff: an account that turned scrubbing off (PATCH
// /v1/account, admin keys and logins only) gets output as printed; the
// audit log is scrubbed all the same.
func TestOutputScrubbingOff(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		replyJSON(w, api.ExecResult{Stdout: awsKey})
	}
	member := e.addKey(e.AcctA, model.RoleMember)
	resp, body := e.do("PATCH", "/v1/account", member, `{"scrub_output": false}`)
	wantError(t, resp, body, http.StatusForbidden, api.CodeForbidden)

	resp, body = e.do("GET", "/v1/account", e.KeyA, nil)
	var acct api.Account
	mustUnmarshal(t, body, &acct)
	if resp.StatusCode != http.StatusOK || !acct.ScrubOutput {
		t.Fatalf("GET /v1/account: %d %s, want scrub_output true by default", resp.StatusCode, body)
	}
	resp, body = e.do("PATCH", "/v1/account", e.KeyA, `{"scrub_output": false}`)
	mustUnmarshal(t, body, &acct)
	if resp.StatusCode != http.StatusOK || acct.ScrubOutput {
		t.Fatalf("PATCH: %d %s, want scrub_output false", resp.StatusCode, body)
	}

	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp, body = e.do("POST", sandboxPath(sb.ID, "/exec"), member, api.ExecRequest{Command: "echo " + awsKey})
	var res api.ExecResult
	mustUnmarshal(t, body, &res)
	if resp.StatusCode != http.StatusOK || res.Stdout != awsKey {
		t.Errorf("exec with scrubbing off: %d %s, want the key as printed", resp.StatusCode, body)
	}
	if d := lastLogEntry(t, e, sb.ID).Detail; strings.Contains(string(d), awsKey) {
		t.Errorf("audit detail holds the key with output scrubbing off: %s", d)
	}
	// Another account still scrubs.
	sbB := e.create(e.KeyB, api.CreateSandboxRequest{})
	_, body = e.do("POST", sandboxPath(sbB.ID, "/exec"), e.KeyB, api.ExecRequest{Command: "x"})
	if strings.Contains(string(body), awsKey) {
		t.Errorf("another account's exec output is not scrubbed: %s", body)
	}
	resp, body = e.do("PATCH", "/v1/account", e.KeyA, `{"scrub_output": true}`)
	mustUnmarshal(t, body, &acct)
	if resp.StatusCode != http.StatusOK || !acct.ScrubOutput {
		t.Errorf("PATCH back on: %d %s", resp.StatusCode, body)
	}
}

// TestProcessOutputScrubbed: process output pages and streams, and the
// interpreter's result, are scrubbed; a page of a running process holds
// back an end that could be a secret's start, and the next page has it.
func TestProcessOutputScrubbed(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Server.SetScrubIdle(time.Hour)
	full := "log: key " + awsKey + "\n"
	e.Sidecar.Route("GET /process/{id}/output", func(w http.ResponseWriter, r *http.Request) {
		var since int
		fmt.Sscan(r.URL.Query().Get("since_offset"), &since)
		// The first page ends inside the key; the process runs on.
		page := api.ProcessOutput{Status: api.ProcessRunning, StdoutChunk: full[since:18], NextOffset: 18}
		if since > 0 {
			page = api.ProcessOutput{Status: api.ProcessExited, StdoutChunk: full[since:], NextOffset: int64(len(full))}
		}
		replyJSON(w, page)
	})
	e.Sidecar.Route("GET /process/{id}/stream", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []api.ProcessEvent{
			{Type: api.ProcessEventOutput, StdoutChunk: full[:18], NextOffset: 18},
			{Type: api.ProcessEventOutput, StdoutChunk: full[18:], NextOffset: int64(len(full))},
			{Type: api.ProcessEventExit, Status: api.ProcessExited},
		} {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
			w.(http.Flusher).Flush()
		}
	})
	e.Sidecar.Route("POST /interpreter/exec", func(w http.ResponseWriter, _ *http.Request) {
		result := "'" + ghToken + "'"
		replyJSON(w, api.InterpreterExecResult{Stdout: awsKey + "\n", Result: &result})
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})

	var got strings.Builder
	since := int64(0)
	for range 2 {
		resp, body := e.do("GET", sandboxPath(sb.ID, fmt.Sprintf("/processes/proc_1/output?since_offset=%d", since)), e.KeyA, nil)
		var page api.ProcessOutput
		mustUnmarshal(t, body, &page)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("output: %d %s", resp.StatusCode, body)
		}
		got.WriteString(page.StdoutChunk)
		if page.Status == api.ProcessRunning && page.NextOffset >= 18 {
			t.Errorf("running page %+v: next_offset does not hold back the key's start", page)
		}
		since = page.NextOffset
	}
	if want := "log: key " + awsPlaced + "\n"; got.String() != want {
		t.Errorf("output pages %q, want %q", got.String(), want)
	}

	_, body := e.do("GET", sandboxPath(sb.ID, "/processes/proc_1/stream"), e.KeyA, nil)
	if strings.Contains(string(body), "AKIA") || !strings.Contains(string(body), awsPlaced) || !strings.Contains(string(body), "event: exit") {
		t.Errorf("process stream %q: want the key scrubbed and the exit event", body)
	}
	if !strings.Contains(string(body), fmt.Sprintf(`"next_offset":%d`, len(full))) {
		t.Errorf("process stream %q does not end at next_offset %d", body, len(full))
	}

	resp, body := e.do("POST", sandboxPath(sb.ID, "/interpreter/exec"), e.KeyA, api.InterpreterExecRequest{Code: "print(k)"})
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "AKIA") || strings.Contains(string(body), "ghp_") {
		t.Errorf("interpreter: %d %s, want its output scrubbed", resp.StatusCode, body)
	}
}

// TestFilesNotScrubbed: file reads and downloads are byte-exact, secrets
// and all.
func TestFilesNotScrubbed(t *testing.T) {
	e := newEnv(t, server.Config{})
	secret := "aws_access_key_id=" + awsKey + "\n"
	e.Sidecar.Route("GET /files/raw", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		io.WriteString(w, secret)
	})
	e.Sidecar.Route("POST /view", func(w http.ResponseWriter, _ *http.Request) {
		replyJSON(w, map[string]any{"content": secret})
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	if _, body := e.do("GET", sandboxPath(sb.ID, "/files/raw?path=/workspace/.env"), e.KeyA, nil); string(body) != secret {
		t.Errorf("download %q, want %q byte-exact", body, secret)
	}
	if _, body := e.do("POST", sandboxPath(sb.ID, "/files/view"), e.KeyA, `{"path":"/workspace/.env"}`); !strings.Contains(string(body), awsKey) {
		t.Errorf("view %s, want the file's content as it is", body)
	}
}

// TestScrubbedStreamErrorsPass: an error answer where a stream was asked
// for (an unknown process, a refused exec) reaches the client whole.
func TestScrubbedStreamErrorsPass(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Sidecar.Route("GET /process/{id}/stream", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"process proc_x not found"}}`)
	})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, `{"error":{"code":"validation_error","message":"bad env"}}`)
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	for _, tt := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"GET", "/processes/proc_x/stream", nil, http.StatusNotFound, api.CodeNotFound},
		{"POST", "/exec", api.ExecRequest{Command: "x"}, http.StatusUnprocessableEntity, api.CodeValidation},
	} {
		resp, body := e.do(tt.method, sandboxPath(sb.ID, tt.path), e.KeyA, tt.body, "Accept", api.ContentTypeNDJSON)
		var env api.ErrorEnvelope
		if resp.StatusCode != tt.status || json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Code != tt.code {
			t.Errorf("%s %s: %d %q, want %d %s whole", tt.method, tt.path, resp.StatusCode, body, tt.status, tt.code)
		}
	}
}

// TestExecStreamLineCap: a scrubbed exec stream holds one line at a time,
// and a line longer than hold.StreamLine (832 KiB) is not held to its
// end: the client gets the output before it, then an error event naming
// the cap, and nothing after it, the exit event neither. No part of a
// secret that straddles the cap leaves: the line is dropped, not cut.
func TestExecStreamLineCap(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Server.SetScrubIdle(time.Hour)
	const prefix = `{"type":"stdout","data":"` // how the long line starts
	// The key starts 10 bytes before the line reaches 832 KiB.
	long := strings.Repeat("x", 832<<10-len(prefix)-10) + awsKey + strings.Repeat("y", 3<<20)
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		writeExecEvents(w,
			api.ExecEvent{Type: api.EventStdout, Data: "before\n"},
			api.ExecEvent{Type: api.EventStdout, Data: long},
			api.ExecEvent{Type: api.EventStdout, Data: "after\n"},
			api.ExecEvent{Type: api.EventExit, ExitCode: 4})
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "./one-long-line"},
		"Accept", api.ContentTypeNDJSON)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %.300s", resp.StatusCode, body)
	}
	if len(body) > 64<<10 {
		t.Fatalf("stream of %d bytes, want the long line dropped", len(body))
	}
	for _, part := range []string{"AKIA", "EXAMPLE", "xxx", "yyy", "after"} {
		if strings.Contains(string(body), part) {
			t.Errorf("stream %s holds %q of the long line or what followed it", body, part)
		}
	}
	var evs []api.ExecEvent
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		var ev api.ExecEvent
		mustUnmarshal(t, sc.Bytes(), &ev)
		evs = append(evs, ev)
	}
	if len(evs) != 2 || evs[0].Type != api.EventStdout || evs[0].Data != "before\n" || evs[1].Type != api.EventError || evs[1].Error == nil {
		t.Fatalf("stream %s, want the output before the long line, then an error event, and nothing more", body)
	}
	if f := evs[1].Error; f.Code != api.CodeSandboxFailed || !strings.Contains(f.Message, "a line of more than 832 KiB") || f.Hint == "" {
		t.Errorf("error event %+v, want sandbox_operation_failed naming the cap, with a hint", f)
	}
	// The command ran to its end: its audit entry has its exit code.
	if entry := lastLogEntry(t, e, sb.ID); entry.ExitCode == nil || *entry.ExitCode != 4 {
		t.Errorf("audit entry %+v, want exit code 4", entry)
	}
}

// TestProcessStreamEventCap: a scrubbed process event stream holds one
// event at a time, and an event longer than hold.StreamLine (832 KiB) is
// not held to its end: the client gets the output before it, then an
// error event naming the cap, and nothing after it, the exit event
// neither. No part of a secret that straddles the cap leaves: the event
// is dropped, not cut. The Go client's reader returns it as the error.
func TestProcessStreamEventCap(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Server.SetScrubIdle(time.Hour)
	const prefix = "event: output\ndata: " + `{"type":"output","stdout_chunk":"` // how the long event starts
	// The key starts 10 bytes before the event reaches 832 KiB; 4 MiB in all.
	long := strings.Repeat("x", 832<<10-len(prefix)-10) + awsKey + strings.Repeat("y", 4<<20)
	e.Sidecar.Route("GET /process/{id}/stream", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []api.ProcessEvent{
			{Type: api.ProcessEventOutput, StdoutChunk: "before\n", NextOffset: 7},
			{Type: api.ProcessEventOutput, StdoutChunk: long, NextOffset: int64(7 + len(long))},
			{Type: api.ProcessEventOutput, StdoutChunk: "after\n", NextOffset: int64(13 + len(long))},
			{Type: api.ProcessEventExit, Status: api.ProcessExited},
		} {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
			w.(http.Flusher).Flush()
		}
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp, body := e.do("GET", sandboxPath(sb.ID, "/processes/proc_1/stream"), e.KeyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d %.300s", resp.StatusCode, body)
	}
	if len(body) > 64<<10 {
		t.Fatalf("stream of %d bytes, want the long event dropped", len(body))
	}
	for _, part := range []string{"AKIA", "EXAMPLE", "xxx", "yyy", "after", "event: exit"} {
		if strings.Contains(string(body), part) {
			t.Errorf("stream %s holds %q of the long event or what followed it", body, part)
		}
	}
	want := "event: output\ndata: " + `{"type":"output","stdout_chunk":"before\n","next_offset":7}` + "\n\nevent: error\ndata: "
	if !strings.HasPrefix(string(body), want) {
		t.Fatalf("stream %q, want the output before the long event, then an error event, and nothing more", body)
	}

	c := client.New(e.URL, e.KeyA)
	var got []api.ProcessEvent
	exit, err := c.StreamProcess(t.Context(), sb.ID, "proc_1", 0, func(ev api.ProcessEvent) error {
		got = append(got, ev)
		return nil
	})
	var apiErr *api.Error
	if exit != nil || !errors.As(err, &apiErr) {
		t.Fatalf("StreamProcess: exit %+v, error %v, want the error event's *api.Error", exit, err)
	}
	if apiErr.Code != api.CodeSandboxFailed || !strings.Contains(apiErr.Message, "an event of more than 832 KiB") || apiErr.Hint == "" {
		t.Errorf("error %+v, want sandbox_operation_failed naming the cap, with a hint", apiErr)
	}
	if diff := cmp.Diff([]api.ProcessEvent{{Type: api.ProcessEventOutput, StdoutChunk: "before\n", NextOffset: 7}}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
