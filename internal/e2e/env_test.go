package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

// sandbox is one real sandbox behind a servertest control plane: the local
// driver, a jailed sidecar, SQLite.
type sandbox struct {
	t  testing.TB
	s  *servertest.Server
	id string
}

// newSandbox starts a control plane and creates one sandbox on it.
func newSandbox(t testing.TB, opts ...servertest.Option) *sandbox {
	t.Helper()
	s := servertest.New(t, opts...)
	sb := &sandbox{t: t, s: s}
	status, body := sb.call("POST", "/v1/sandboxes", api.CreateSandboxRequest{Label: t.Name()})
	if status != http.StatusCreated {
		t.Fatalf("create sandbox: %d %s", status, body)
	}
	var out api.Sandbox
	mustDecode(t, body, &out)
	sb.id = out.ID
	return sb
}

// call sends a request to the control plane. body is nil, an io.Reader
// (sent as is) or a value sent as JSON.
func (sb *sandbox) call(method, path string, body any) (int, []byte) {
	sb.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd = b
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			sb.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, sb.s.BaseURL+path, rd)
	if err != nil {
		sb.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+sb.s.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		sb.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		sb.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// route calls a route of this sandbox: rest is the part after /v1/sandboxes/{id}.
func (sb *sandbox) route(method, rest string, body any) (int, []byte) {
	sb.t.Helper()
	return sb.call(method, "/v1/sandboxes/"+sb.id+rest, body)
}

// exec runs command in the sandbox and returns its result; any answer but
// 200 fails the test.
func (sb *sandbox) exec(command string) api.ExecResult {
	sb.t.Helper()
	status, body := sb.route("POST", "/exec", api.ExecRequest{Command: command, Timeout: 60})
	if status != http.StatusOK {
		sb.t.Fatalf("exec %q: %d %s", command, status, body)
	}
	var res api.ExecResult
	mustDecode(sb.t, body, &res)
	return res
}

// sh runs command and fails the test unless it exits 0; it returns stdout.
func (sb *sandbox) sh(command string) string {
	sb.t.Helper()
	res := sb.exec(command)
	if res.ExitCode != 0 {
		sb.t.Fatalf("exec %q: exit %d\nstdout: %s\nstderr: %s", command, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

func mustDecode(t testing.TB, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
}

// apiError decodes an error envelope.
func apiError(t testing.TB, body []byte) api.Error {
	t.Helper()
	var env api.ErrorEnvelope
	mustDecode(t, body, &env)
	if env.Error == nil {
		t.Fatalf("not an error envelope: %s", body)
	}
	return *env.Error
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tarOf is a tar stream of regular files.
func tarOf(t testing.TB, files map[string]string) string {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		content := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, content); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// untar returns the regular files of a tar stream by name.
func untar(t testing.TB, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("read tar: %v", err)
			}
			out[strings.TrimPrefix(h.Name, "./")] = string(data)
		}
	}
}

// ok calls a route of this sandbox and fails the test unless it answers 2xx.
func (sb *sandbox) ok(method, rest string, body any) []byte {
	sb.t.Helper()
	status, out := sb.route(method, rest, body)
	if status/100 != 2 {
		sb.t.Fatalf("%s %s: %d %s", method, rest, status, out)
	}
	return out
}

// in returns sb reporting to t, for use inside t.Run: a failure must stop
// the subtest, not its parent.
func (sb *sandbox) in(t testing.TB) *sandbox {
	c := *sb
	c.t = t
	return &c
}

// tarHeaders is a tar stream of entries without content (links, empty files).
func tarHeaders(t testing.TB, hdrs []tar.Header) string {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hdrs {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
