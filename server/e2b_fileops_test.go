package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/e2b/envd"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar"
)

// fileOpSidecar answers the E2B file operations' execs by running their
// scripts with /bin/sh in dir (the workspace), cutting each stream at the
// request's max_output_bytes as the sidecar does, and records each
// request's max_output_bytes by its description.
type fileOpSidecar struct {
	dir string
	mu  sync.Mutex
	max map[string]int64 // by description ("e2b ls")
}

func (f *fileOpSidecar) exec(w http.ResponseWriter, _ *http.Request, req api.ExecRequest) {
	f.mu.Lock()
	f.max[req.Description] = req.MaxOutputBytes
	f.mu.Unlock()
	cmd := exec.Command("/bin/sh", "-c", req.Command)
	cmd.Dir = f.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res := api.ExecResult{}
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		res.ExitCode = exit.ExitCode()
	}
	cut := func(b []byte) string {
		if int64(len(b)) > req.MaxOutputBytes {
			res.Truncated = true
			b = b[:req.MaxOutputBytes]
		}
		return string(b)
	}
	res.Stdout, res.Stderr = cut(stdout.Bytes()), cut(stderr.Bytes())
	replyJSON(w, res)
}

// e2bRPC calls a Filesystem RPC of sandbox id with token, Connect's JSON
// protocol, as the E2B SDK does.
func e2bRPC(t *testing.T, base, id, token, method, body string) (int, []byte) {
	t.Helper()
	return e2bsdk.Do(t, base, "POST", "/filesystem.Filesystem/"+method, http.Header{
		"Content-Type":             {"application/json"},
		"Connect-Protocol-Version": {"1"},
		"X-Access-Token":           {token},
		envd.HeaderSandboxID:       {id},
		envd.HeaderSandboxPort:     {envd.PortEnvd},
	}, body)
}

// e2bFileOpsEnv is a server with the E2B facade whose sidecar runs the
// file scripts in a temporary workspace, and an E2B sandbox in it.
func e2bFileOpsEnv(t *testing.T, cfg server.Config) (e *env, f *fileOpSidecar, id, token string) {
	t.Helper()
	e = newEnv(t, cfg)
	e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
	f = &fileOpSidecar{dir: t.TempDir(), max: map[string]int64{}}
	e.Sidecar.ExecFunc = f.exec
	status, body := e2bsdk.Do(t, e.URL, "POST", "/v2/sandboxes", http.Header{"X-API-Key": {e.KeyA}}, `{"templateID":"base","timeout":600}`)
	var sb struct{ SandboxID, EnvdAccessToken string }
	if status != http.StatusCreated || json.Unmarshal(body, &sb) != nil || sb.EnvdAccessToken == "" {
		t.Fatalf("create: %d %s", status, body)
	}
	return e, f, sb.SandboxID, sb.EnvdAccessToken
}

// TestE2BListDirOfAFile: ListDir of a file answers on the wire as envd's
// does: 400 {"code":"invalid_argument","message":"path is not a
// directory: P"}, P with its symlinks resolved (the SDK throws an
// InvalidArgumentError with that message).
func TestE2BListDirOfAFile(t *testing.T) {
	t.Parallel()
	e, f, id, token := e2bFileOpsEnv(t, server.Config{})
	if err := os.WriteFile(filepath.Join(f.dir, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f.txt", filepath.Join(f.dir, "lf")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"f.txt", "/home/user/f.txt", "/home/user/lf"} {
		status, body := e2bRPC(t, e.URL, id, token, "ListDir", `{"path":"`+p+`","depth":1}`)
		want := `{"code":"invalid_argument","message":"path is not a directory: /home/user/f.txt"}`
		if status != http.StatusBadRequest || strings.TrimSpace(string(body)) != want {
			t.Errorf("ListDir %s = %d %s, want 400 %s", p, status, body, want)
		}
	}
}

// TestE2BMissingPath: ListDir and Stat of a path that is not there answer
// on the wire as envd's do: 404 not_found (the SDK's NotFoundError, and
// files.exists false) with envd's message: ListDir's names the first part
// of the path that is not there, the symlinks before it resolved (a
// dangling link's target), Stat's the path. Both said "path 'P' does not
// exist".
func TestE2BMissingPath(t *testing.T) {
	t.Parallel()
	e, f, id, token := e2bFileOpsEnv(t, server.Config{})
	if err := os.Mkdir(filepath.Join(f.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/gone", filepath.Join(f.dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ method, path, want string }{
		{"ListDir", "nope/deeper", "path not found: lstat /home/user/nope: no such file or directory"},
		{"ListDir", "/home/user/sub/gone/x", "path not found: lstat /home/user/sub/gone: no such file or directory"},
		{"ListDir", "dangling", "path not found: lstat /home/user/sub/gone: no such file or directory"},
		{"Stat", "nope/deeper", "file not found: lstat /home/user/nope/deeper: no such file or directory"},
	} {
		status, body := e2bRPC(t, e.URL, id, token, tt.method, `{"path":"`+tt.path+`"}`)
		want := `{"code":"not_found","message":"` + tt.want + `"}`
		if status != http.StatusNotFound || strings.TrimSpace(string(body)) != want {
			t.Errorf("%s %s = %d %s, want 404 %s", tt.method, tt.path, status, body, want)
		}
	}
}

// execRecorder is a real sidecar (sidecar.New: commands run as the test's
// user in its workspace), served as its binary serves it, behind a
// recorder of the exec requests it is sent, by description ("e2b ls").
type execRecorder struct {
	ws   string
	addr string
	mu   sync.Mutex
	reqs map[string]api.ExecRequest // the last of each description
}

// newExecRecorder starts it; env is the commands' base environment
// (sidecar.Options.Env).
func newExecRecorder(t *testing.T, env func(ws string) []string) *execRecorder {
	t.Helper()
	r := &execRecorder{ws: t.TempDir(), reqs: map[string]api.ExecRequest{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sc := sidecar.New(sidecar.Options{Token: execRecorderToken, Workspace: r.ws, Env: env(r.ws), Log: log})
	record := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/exec" {
			b, _ := io.ReadAll(req.Body)
			var er api.ExecRequest
			if json.Unmarshal(b, &er) == nil {
				r.mu.Lock()
				r.reqs[er.Description] = er
				r.mu.Unlock()
			}
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		sc.ServeHTTP(w, req)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := apihttp.NewServer(record, log)
	go func() { _ = hs.Serve(apihttp.Listener(ln)) }()
	t.Cleanup(func() { hs.Close() })
	r.addr = ln.Addr().String()
	return r
}

const execRecorderToken = "fileops-sidecar-token"

// e2bRealSidecarEnv is a server with the E2B facade and an E2B sandbox
// whose sidecar is r.
func e2bRealSidecarEnv(t *testing.T, r *execRecorder) (e *env, id, token string) {
	t.Helper()
	e = newEnv(t, server.Config{})
	e.Driver.CreateFunc = func(context.Context, model.Spec) (model.Endpoint, error) {
		return model.Endpoint{Network: "tcp", Address: r.addr, Token: execRecorderToken}, nil
	}
	e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
	status, body := e2bsdk.Do(t, e.URL, "POST", "/v2/sandboxes", http.Header{"X-API-Key": {e.KeyA}}, `{"templateID":"base","timeout":600}`)
	var sb struct{ SandboxID, EnvdAccessToken string }
	if status != http.StatusCreated || json.Unmarshal(body, &sb) != nil || sb.EnvdAccessToken == "" {
		t.Fatalf("create: %d %s", status, body)
	}
	return e, sb.SandboxID, sb.EnvdAccessToken
}

// TestE2BListDirLarge: a directory whose listing is over a listing's
// output limit (4 MiB, some 40,000 entries) is not held whole: ListDir is
// refused with resource_exhausted (the SDK's RateLimitError) saying how
// large a listing may be and to list less, and its walk is stopped once
// the limit is passed, the links' walk never starting; a listing of a
// depth that fits is answered; each file operation asks the sidecar for
// at most its own output (stat, mkdir, move, remove: 64 KiB; ls: 4 MiB).
// The sidecar is a real one, and find runs with SIGPIPE ignored, as in an
// image whose commands start so: the walk was stopped by SIGPIPE at its
// next write once head -c, which its output went through, had passed
// the limit, and with SIGPIPE ignored it walked the whole tree (its
// writes failing), exiting 1. The sidecar now stops the listing's
// command at the limit itself (on_output_limit "stop", its process
// group killed): find never ends by itself.
func TestE2BListDirLarge(t *testing.T) {
	t.Parallel()
	var finds func() []string
	r := newExecRecorder(t, func(ws string) []string {
		var path string
		path, finds = findRuns(t)
		env := slices.DeleteFunc(sidecar.SafeEnv(ws), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
		return append(env, path)
	})
	e, id, token := e2bRealSidecarEnv(t, r)
	// 36,000 files of 240-character names: about 10 MiB of listing.
	big := filepath.Join(r.ws, "big")
	if err := os.MkdirAll(filepath.Join(big, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("n", 234)
	for i := range 36000 {
		if err := os.WriteFile(filepath.Join(big, "sub", fmt.Sprintf("%s%06d", name, i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	status, body := e2bRPC(t, e.URL, id, token, "ListDir", `{"path":"/workspace/big","depth":2}`)
	var ce struct{ Code, Message string }
	_ = json.Unmarshal(body, &ce)
	if status != http.StatusTooManyRequests || ce.Code != "resource_exhausted" ||
		!strings.Contains(ce.Message, "the listing of /workspace/big is larger than 4 MiB") || !strings.Contains(ce.Message, "smaller depth") {
		t.Fatalf("ListDir of a large directory = %d %.300s, want resource_exhausted naming the limit", status, body)
	}
	if got := finds(); !slices.Equal(got, []string{"start"}) {
		t.Errorf("the large listing's finds: %q, want one started and never ended by itself (killed past the limit)", got)
	}

	// Its own entries only (depth 1): one directory.
	status, body = e2bRPC(t, e.URL, id, token, "ListDir", `{"path":"/workspace/big","depth":1}`)
	var list struct{ Entries []struct{ Path string } }
	if status != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Entries) != 1 || list.Entries[0].Path != "/workspace/big/sub" {
		t.Fatalf("ListDir depth 1 = %d %.300s, want the one subdirectory", status, body)
	}
	if got := finds(); !slices.Equal(got, []string{"start", "0", "start", "0"}) {
		t.Errorf("the small listing's finds: %q, want the walks of its entries and of its links whole (0, 0)", got)
	}

	for _, call := range []struct{ method, body string }{
		{"Stat", `{"path":"/workspace/big"}`},
		{"MakeDir", `{"path":"/workspace/made"}`},
		{"Move", `{"source":"/workspace/made","destination":"/workspace/moved"}`},
		{"Remove", `{"path":"/workspace/moved"}`},
	} {
		if status, body := e2bRPC(t, e.URL, id, token, call.method, call.body); status != http.StatusOK {
			t.Fatalf("%s = %d %s", call.method, status, body)
		}
	}
	type asked struct {
		Max     int64
		OnLimit string
	}
	want := map[string]asked{
		"e2b ls": {4 << 20, api.OutputLimitStop}, "e2b stat": {64 << 10, ""}, "e2b make_dir": {64 << 10, ""},
		"e2b move": {64 << 10, ""}, "e2b remove": {64 << 10, ""},
	}
	got := map[string]asked{}
	r.mu.Lock()
	for op, req := range r.reqs {
		got[op] = asked{req.MaxOutputBytes, req.OnOutputLimit}
	}
	r.mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("max_output_bytes and on_output_limit asked (-want +got):\n%s", diff)
	}
}

// findRuns puts find behind a wrapper that ignores SIGPIPE (find inherits
// it) and records each run's start and, if it ends by itself, its exit
// status. It returns the PATH entry that finds the wrapper first, and a
// function that gives what was recorded since it was last called.
func findRuns(t *testing.T) (path string, runs func() []string) {
	t.Helper()
	real, err := exec.LookPath("find")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "runs")
	wrapper := "#!/bin/sh\ntrap '' PIPE\necho start >> " + log + "\n" + real + ` "$@"` + "\ns=$?\necho $s >> " + log + "\nexit $s\n"
	if err := os.WriteFile(filepath.Join(bin, "find"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return "PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", func() []string {
		b, _ := os.ReadFile(log)
		_ = os.Remove(log)
		return strings.Fields(string(b))
	}
}

// TestE2BFileOpsReserveHeldOutput: a file operation reserves its answer's
// bound of the held-output budget before its command runs: with an
// account share below a listing's bound (64.25 MiB) and above a
// stat's (768 KiB), ListDir is refused (resource_exhausted, the
// refusal's message and hint) and the sidecar never ran it, while Stat
// passes; each stat gives its reservation back when it has answered.
func TestE2BFileOpsReserveHeldOutput(t *testing.T) {
	t.Parallel()
	e, f, id, token := e2bFileOpsEnv(t, server.Config{HeldOutputBytes: 64 << 20, HeldOutputAccountBytes: 8 << 20})
	status, body := e2bRPC(t, e.URL, id, token, "ListDir", `{"path":"/workspace","depth":1}`)
	var ce struct{ Code, Message string }
	_ = json.Unmarshal(body, &ce)
	if status != http.StatusTooManyRequests || ce.Code != "resource_exhausted" ||
		!strings.HasPrefix(ce.Message, "file operation ls refused: your account's JSON answers already hold 0 bytes") ||
		!strings.Contains(ce.Message, "(retry when your account's other file operations") {
		t.Fatalf("ListDir over the account's share = %d %s, want resource_exhausted with the refusal and its hint", status, body)
	}
	f.mu.Lock()
	_, ran := f.max["e2b ls"]
	f.mu.Unlock()
	if ran {
		t.Error("the refused listing reached the sidecar")
	}
	// More stats than the share holds at once: each gave its reservation
	// back when it answered.
	for i := range 20 {
		if status, body := e2bRPC(t, e.URL, id, token, "Stat", `{"path":"/workspace"}`); status != http.StatusOK {
			t.Fatalf("Stat %d = %d %s", i, status, body)
		}
	}
}

// TestE2BListDirHeldUntilAnswered: a listing's reservation of the
// held-output budget lasts until its answer is written, not until its
// RPC handler returns (Connect marshals and writes the response after
// that): while a slow client has read only the start of a large listing,
// the account's share (one listing's bound and a little) has no room for
// a stat, whose refusal counts the listing's reservation; once the client
// has read it all, the stat passes.
func TestE2BListDirHeldUntilAnswered(t *testing.T) {
	t.Parallel()
	const listing = 4 * (4*4<<20 + 64<<10) // hold.Answer(4 × 4 MiB)
	e, f, id, token := e2bFileOpsEnv(t, server.Config{HeldOutputBytes: 256 << 20, HeldOutputAccountBytes: listing + 512<<10})
	// 12,000 files of 240-character names: some 3.5 MiB of find's output,
	// under a listing's limit, and some 8 MiB of answer, more than the
	// loopback connection's buffers hold.
	big := filepath.Join(f.dir, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("n", 234)
	for i := range 12000 {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("%s%06d", name, i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The slow client: a receive buffer of 4 KiB, and it reads the
	// answer's header only.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := d.DialContext(t.Context(), "tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, _ := http.NewRequest("POST", e.URL+"/filesystem.Filesystem/ListDir", strings.NewReader(`{"path":"/workspace/big","depth":1}`))
	req.Header = http.Header{
		"Content-Type": {"application/json"}, "Connect-Protocol-Version": {"1"}, "X-Access-Token": {token},
		envd.HeaderSandboxID: {id}, envd.HeaderSandboxPort: {envd.PortEnvd},
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("ListDir = %d %.300s", resp.StatusCode, b)
	}

	// The answer is being written: the listing's reservation is live.
	status, body := e2bRPC(t, e.URL, id, token, "Stat", `{"path":"/workspace/big"}`)
	var ce struct{ Code, Message string }
	_ = json.Unmarshal(body, &ce)
	if want := fmt.Sprintf("file operation stat refused: your account's JSON answers already hold %d bytes", listing); status != http.StatusTooManyRequests ||
		ce.Code != "resource_exhausted" || !strings.HasPrefix(ce.Message, want) {
		t.Fatalf("Stat while the listing's answer is read = %d %s, want resource_exhausted starting %q", status, body, want)
	}

	var list struct{ Entries []struct{ Path string } }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Entries) != 12000 {
		t.Fatalf("listing: %d entries, %v; want 12000", len(list.Entries), err)
	}
	// Read whole: the reservation is given back (right after the last
	// write, which the client may see first).
	for i := 0; ; i++ {
		status, body := e2bRPC(t, e.URL, id, token, "Stat", `{"path":"/workspace/big"}`)
		if status == http.StatusOK {
			break
		}
		if i == 300 {
			t.Fatalf("Stat after the listing was read = %d %s, want its reservation given back", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
