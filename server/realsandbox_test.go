package server_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

// realEnv is a servertest control plane (real SQLite, the local driver, a
// jailed sidecar) with one sandbox.
type realEnv struct {
	t  *testing.T
	s  *servertest.Server
	sb api.Sandbox
}

func newRealEnv(t *testing.T) *realEnv {
	t.Helper()
	s := servertest.New(t)
	re := &realEnv{t: t, s: s}
	resp, body := re.do("POST", "/v1/sandboxes", s.APIKey, strings.NewReader(`{}`))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &re.sb)
	return re
}

// do sends body (nil for none) with the key and returns the answer, read.
func (re *realEnv) do(method, path, key string, body io.Reader) (*http.Response, []byte) {
	re.t.Helper()
	resp := re.send(method, path, key, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		re.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp, b
}

// send is do without reading the body.
func (re *realEnv) send(method, path, key string, body io.Reader) *http.Response {
	re.t.Helper()
	req, err := http.NewRequest(method, re.s.BaseURL+path, body)
	if err != nil {
		re.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		re.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

func (re *realEnv) path(rest string) string { return sandboxPath(re.sb.ID, rest) }

// entries returns the sandbox's whole audit log from the store, checked
// with VerifyExecLog.
func (re *realEnv) entries() []*model.ExecLogEntry {
	re.t.Helper()
	head, err := re.s.Store.ExecLogHead(context.Background(), re.sb.ID)
	if err != nil {
		re.t.Fatal(err)
	}
	all, _, err := re.s.Store.ExecLog(context.Background(), re.sb.ID, 10000, 0)
	if err != nil {
		re.t.Fatal(err)
	}
	if err := model.VerifyExecLog(all, head); err != nil {
		re.t.Errorf("VerifyExecLog: %v", err)
	}
	return all
}

// realStep is one call of TestRealSandboxRoutes. Steps run in order and
// build on each other (the file written first is viewed, edited, …).
type realStep struct {
	name, method, path, body string
	status                   int
	check                    func(t *testing.T, body []byte) // one field of the answer
	op                       string                          // audit operation; "" for none
}

// field decodes body and compares one value, found by fn, with want.
func field[T any](want any, fn func(T) any) func(*testing.T, []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		var v T
		mustUnmarshal(t, body, &v)
		if got := fn(v); !cmp.Equal(got, want) {
			t.Errorf("got %v, want %v (body %s)", got, want, body)
		}
	}
}

// TestRealSandboxRoutes hits every proxied route once through the whole
// stack: control plane → local driver → jailed sidecar. It checks each
// answer, then the audit entries they wrote, that the chain verifies and
// that file contents never reached the database.
func TestRealSandboxRoutes(t *testing.T) {
	t.Parallel()
	re := newRealEnv(t)
	const secret = "TOP-SECRET-CONTENT-90125"
	var pid string
	tarball := tarOf(t, map[string]string{"inner/hello.txt": "hello from tar\n"})
	steps := []realStep{
		{
			"create", "POST", "/files", `{"path":"notes.txt","content":"` + secret + `\nline2\n"}`, 200,
			field(true, func(r api.FileCreateResult) any { return r.Created }), "file_create",
		},
		{
			"view", "POST", "/files/view", `{"path":"notes.txt","view_range":[2,2]}`, 200,
			field(true, func(r api.ViewResult) any { return strings.Contains(r.Content, "line2") }), "view",
		},
		{
			"str-replace", "POST", "/files/str-replace", `{"path":"notes.txt","old_str":"line2","new_str":"LINE2"}`, 200,
			field(1, func(r api.StrReplaceResult) any { return r.Occurrences }), "str_replace",
		},
		{
			"ls", "POST", "/files/ls", `{"path":"/"}`, 200,
			field(true, func(r api.LsResult) any { return len(r.Entries) > 0 }), "ls",
		},
		{
			"glob", "POST", "/files/glob", `{"pattern":"*.txt"}`, 200,
			field(1, func(r api.GlobResult) any { return len(r.Matches) }), "glob",
		},
		{
			"grep", "POST", "/files/grep", `{"pattern":"LINE\\d"}`, 200,
			field(1, func(r api.GrepResult) any { return len(r.Matches) }), "grep",
		},
		{
			"watch", "POST", "/files/watch", `{"path":"/","timeout_seconds":0.2}`, 200,
			field(true, func(r api.WatchResult) any { return r.TimedOut }), "watch",
		},
		{
			"present", "POST", "/files/present", `{"filepaths":["notes.txt"]}`, 200,
			field(1, func(r api.PresentFilesResult) any { return len(r.Files) }), "present_files",
		},
		{
			"raw upload", "PUT", "/files/raw?path=data.bin", "0123456789", 200,
			field(int64(10), func(r api.FileWriteResult) any { return r.Size }), "file_upload",
		},
		{
			"raw download", "GET", "/files/raw?path=data.bin", "", 200,
			func(t *testing.T, b []byte) { wantBody(t, b, "0123456789") }, "file_download",
		},
		{
			"archive upload", "POST", "/files/archive?path=unpacked", tarball, 200,
			field(1, func(r api.ArchiveResult) any { return r.Files }), "archive_upload",
		},
		{
			"archive download", "GET", "/files/archive?path=unpacked", "", 200,
			func(t *testing.T, b []byte) { wantBody(t, untar(t, b)["inner/hello.txt"], "hello from tar\n") }, "archive_download",
		},

		{
			"start process", "POST", "/processes", `{"command":"cat","max_runtime_seconds":60}`, 201,
			func(t *testing.T, b []byte) {
				var r api.ProcessStarted
				mustUnmarshal(t, b, &r)
				if pid = r.ProcessID; !strings.HasPrefix(pid, "proc_") {
					t.Errorf("process_id = %q", pid)
				}
			}, "start_process",
		},
		{
			"list processes", "GET", "/processes", "", 200,
			field(1, func(r api.ProcessList) any { return len(r.Processes) }), "",
		},
		{
			"input", "POST", "/processes/{pid}/input", `{"data":"hello\n"}`, 200,
			field(6, func(r api.ProcessInputResult) any { return r.BytesWritten }), "send_process_input",
		},
		{
			"output", "GET", "/processes/{pid}/output?since_offset=0", "", 200,
			field(api.ProcessRunning, func(r api.ProcessOutput) any { return r.Status }), "",
		},
		{
			"stop", "POST", "/processes/{pid}/stop", "", 200,
			field(api.ProcessStopped, func(r api.ProcessStopResult) any { return r.Status }), "stop_process",
		},
		{
			"stream", "GET", "/processes/{pid}/stream?api_key={key}", "", 200,
			func(t *testing.T, b []byte) {
				if !bytes.Contains(b, []byte("event: exit\n")) || !bytes.Contains(b, []byte("hello")) {
					t.Errorf("stream = %q, want the output and an exit event", b)
				}
			}, "",
		},
		{
			"kill-all", "POST", "/processes/kill-all", "", 200,
			field(0, func(r api.KillAllResult) any { return r.Killed }), "kill_all_processes",
		},

		{
			"interpreter exec", "POST", "/interpreter/exec", `{"code":"x = 41\nx + 1"}`, 200,
			field("42", func(r api.InterpreterExecResult) any { return deref(r.Result) }), "interpreter_exec",
		},
		{
			"interpreter status", "GET", "/interpreter/status", "", 200,
			field(true, func(r api.InterpreterStatus) any { return r.Running }), "",
		},
		{
			"interpreter reset", "POST", "/interpreter/reset", "", 200,
			field("reset", func(r api.InterpreterReset) any { return r.Status }), "interpreter_reset",
		},

		// No language server is installed on the test hosts: these prove
		// the routes reach the sidecar, whose refusals pass through.
		{"lsp start", "POST", "/lsp/start", `{"language":"cobol"}`, 422, wantCode(api.CodeValidation), ""},
		{"lsp open", "POST", "/lsp/lsp_nope/open", `{"path":"m.go","content":"package m"}`, 404, wantCode(api.CodeNotFound), ""},
		{"lsp completion", "POST", "/lsp/lsp_nope/completion", `{"path":"m.go","line":0,"character":0}`, 404, wantCode(api.CodeNotFound), ""},
		{"lsp stop", "POST", "/lsp/lsp_nope/stop", "", 404, wantCode(api.CodeNotFound), ""},
	}
	var wantOps []string
	for _, st := range steps {
		ok := t.Run(st.name, func(t *testing.T) {
			p := strings.NewReplacer("{pid}", pid, "{key}", url.QueryEscape(re.s.APIKey)).Replace(st.path)
			key := re.s.APIKey
			if strings.Contains(st.path, "{key}") {
				key = ""
			}
			var body io.Reader
			if st.body != "" {
				body = strings.NewReader(st.body)
			}
			if st.name == "output" {
				waitForOutput(t, re, pid, "hello\n")
			}
			resp, b := re.do(st.method, re.path(p), key, body)
			if resp.StatusCode != st.status {
				t.Fatalf("%s %s = %d %s, want %d", st.method, p, resp.StatusCode, b, st.status)
			}
			st.check(t, b)
		})
		if !ok && st.op == "start_process" {
			t.FailNow()
		}
		if st.op != "" {
			wantOps = append(wantOps, st.op)
		}
	}

	eventually(t, "every audit entry", func() bool { return len(re.entries()) >= len(wantOps) })
	var ops []string
	for _, e := range re.entries() {
		ops = append(ops, e.Operation)
	}
	if diff := cmp.Diff(wantOps, ops); diff != "" {
		t.Errorf("audit operations (-want +got):\n%s", diff)
	}
	assertNotInDB(t, re.s.StateDir, secret, "hello from tar")
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func wantBody(t *testing.T, got []byte, want string) {
	t.Helper()
	if string(got) != want {
		t.Errorf("body = %q, want %q", got, want)
	}
}

func wantCode(code string) func(*testing.T, []byte) {
	return func(t *testing.T, b []byte) {
		t.Helper()
		if e := apiError(t, b); e.Code != code {
			t.Errorf("code = %q, want %q (%s)", e.Code, code, b)
		}
	}
}

// waitForOutput polls the process output until it has want.
func waitForOutput(t *testing.T, re *realEnv, pid, want string) {
	t.Helper()
	eventually(t, "process output "+want, func() bool {
		_, b := re.do("GET", re.path("/processes/"+pid+"/output"), re.s.APIKey, nil)
		var out api.ProcessOutput
		mustUnmarshal(t, b, &out)
		return out.StdoutChunk == want
	})
}

func tarOf(t *testing.T, files map[string]string) string {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, content)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// untar returns the regular files of a tar stream by name.
func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			data, _ := io.ReadAll(tr)
			out[strings.TrimPrefix(h.Name, "./")] = data
		}
	}
}

// TestRealTransfer50MiB: a 50 MiB random file goes up and comes back
// byte-identical through the control plane, raw and as a tar archive, and
// the audit entries count its bytes.
func TestRealTransfer50MiB(t *testing.T) {
	t.Parallel()
	re := newRealEnv(t)
	const size = 50 << 20
	data := make([]byte, size)
	rand.Read(data)
	want := sha256.Sum256(data)
	key := re.s.APIKey

	req, _ := http.NewRequest("PUT", re.s.BaseURL+re.path("/files/raw?path=big/blob.bin"), bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}

	resp = re.send("GET", re.path("/files/raw?path=big/blob.bin"), key, nil)
	if resp.ContentLength != size {
		t.Errorf("download Content-Length = %d, want %d", resp.ContentLength, size)
	}
	if got := hashBody(t, resp); got != want {
		t.Error("raw download differs from the upload")
	}

	// Archive the directory, extract it elsewhere, and read the file back.
	resp, tarball := re.do("GET", re.path("/files/archive?path=big"), key, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("archive download: %d", resp.StatusCode)
	}
	if sha256.Sum256(untar(t, tarball)["blob.bin"]) != want {
		t.Error("the archive's blob.bin differs from the upload")
	}
	resp, b = re.do("POST", re.path("/files/archive?path=copy"), key, bytes.NewReader(tarball))
	if resp.StatusCode != 200 {
		t.Fatalf("archive upload: %d %s", resp.StatusCode, b)
	}
	resp = re.send("GET", re.path("/files/raw?path=copy/blob.bin"), key, nil)
	if got := hashBody(t, resp); got != want {
		t.Error("the file extracted from the archive differs from the upload")
	}

	want2 := []string{"file_upload true", "file_download true", "archive_download true", "archive_upload true", "file_download true"}
	// Entries of non-exec routes are written once the response is out, so
	// the last one may land just after the client has read its body.
	entries := re.entries()
	for deadline := time.Now().Add(30 * time.Second); len(entries) < len(want2) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		entries = re.entries()
	}
	var got []string
	for _, e := range entries {
		var d struct {
			Bytes int64 `json:"bytes"`
		}
		json.Unmarshal(e.Detail, &d)
		got = append(got, fmt.Sprintf("%s %v", e.Operation, d.Bytes >= size))
	}
	if diff := cmp.Diff(want2, got); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
}

func hashBody(t *testing.T, resp *http.Response) [32]byte {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("download: %d %s", resp.StatusCode, b)
	}
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		t.Fatalf("download: %v", err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// TestRealTakeover attaches to the sandbox's real terminal through the
// control plane: a typed command runs, a resize reaches the PTY, and a
// member key is refused before the upgrade.
func TestRealTakeover(t *testing.T) {
	t.Parallel()
	re := newRealEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(re.s.BaseURL, "http") + re.path("/takeover")
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + re.s.APIKey}}})
	if err != nil {
		t.Fatalf("dial takeover: %v", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(16 << 20)
	var screen bytes.Buffer
	expect := func(want string) {
		t.Helper()
		for !strings.Contains(screen.String(), want) {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for %q: %v; screen so far:\n%s", want, err, screen.String())
			}
			screen.Write(b)
		}
	}
	send := func(typ websocket.MessageType, s string) {
		t.Helper()
		if err := conn.Write(ctx, typ, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	send(websocket.MessageBinary, "echo takeover-$((6*7))\r")
	expect("takeover-42")
	send(websocket.MessageText, `{"type":"resize","cols":101,"rows":31}`)
	send(websocket.MessageBinary, "stty size\r")
	expect("31 101")
	conn.Close(websocket.StatusNormalClosure, "")

	// A member key of the same account may not attach.
	member := model.NewAPIKey()
	if err := re.s.Store.CreateAPIKey(ctx, &model.APIKey{
		ID: model.NewID(), AccountID: re.s.Account.ID, Hash: model.HashAPIKey(member), Prefix: member[:17],
		Role: model.RoleMember, CreatedAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	_, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + member}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("member dial = %v, %v; want HTTP 403", resp, err)
	}

	eventually(t, "takeover_end", func() bool {
		es := re.entries()
		return len(es) >= 3 && es[len(es)-1].Operation == "takeover_end"
	})
	// Each entered line is flushed as it is entered: one takeover_input
	// per line, or one for both when the second came before the first
	// was written.
	es := re.entries()
	var end map[string]any
	mustUnmarshal(t, es[len(es)-1].Detail, &end)
	var input strings.Builder
	for _, e := range es[1 : len(es)-1] {
		var d struct{ Input string }
		mustUnmarshal(t, e.Detail, &d)
		if e.Operation != "takeover_input" {
			t.Errorf("entry %s between takeover_start and takeover_end", e.Operation)
		}
		input.WriteString(d.Input)
	}
	if want := "echo takeover-$((6*7))\rstty size\r"; es[0].Operation != "takeover_start" || input.String() != want {
		t.Errorf("takeover input = %q (first entry %s), want %q", input.String(), es[0].Operation, want)
	}
	typed := float64(len("echo takeover-$((6*7))\r") + len("stty size\r"))
	if end["bytes_typed"] != typed {
		t.Errorf("bytes_typed = %v, want %v", end["bytes_typed"], typed)
	}
}
