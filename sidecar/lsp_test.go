package sidecar

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// goplsDir finds gopls on PATH or in the CI tools cache that .ci/run fills.
func goplsDir(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("gopls"); err == nil {
		return filepath.Dir(p)
	}
	tools := os.Getenv("BOXKITE_CI_TOOLS")
	if tools == "" {
		home, _ := os.UserHomeDir()
		tools = filepath.Join(home, ".cache", "boxkite-tools")
	}
	if isExecutable(filepath.Join(tools, "gopls")) {
		return tools
	}
	t.Fatalf("gopls is neither on PATH nor in %s: install it as .ci/run does", tools)
	return ""
}

// lspEnv is the command environment with gopls and the go command on PATH,
// kept offline: the test module needs nothing but the standard library.
func lspEnv(t testing.TB, ws string) []string {
	t.Helper()
	goCmd, err := exec.LookPath("go") // gopls runs go list
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	env := SafeEnv(ws)
	for i, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + goplsDir(t) + ":" + filepath.Dir(goCmd) + ":" + path
		}
	}
	return append(env, "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=", "GOENV=off")
}

func TestLSPGoCompletion(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	url, _ := newToolServer(t, Options{Workspace: ws, Env: lspEnv(t, ws), Tools: ToolLimits{MaxLSPServers: 1}})
	if err := os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/demo\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var started api.LSPStarted
	doJSON(t, http.MethodPost, url+"/lsp/start", api.LSPStartRequest{Language: api.LanguageGo}, http.StatusCreated, &started)
	if !strings.HasPrefix(started.LSPID, "lsp_") {
		t.Fatalf("lsp_id %q", started.LSPID)
	}
	base := url + "/lsp/" + started.LSPID
	if body := doJSON(t, http.MethodPost, url+"/lsp/start", api.LSPStartRequest{Language: api.LanguageGo}, http.StatusTooManyRequests, nil); decodeError(t, body).Code != api.CodeLimitExceeded {
		t.Errorf("second server over a limit of 1: %s", body)
	}

	// main.go exists only in the server's view: open does not write to disk.
	src := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.\n}\n"
	var st api.LSPStatus
	doJSON(t, http.MethodPost, base+"/open", api.LSPOpenRequest{Path: "main.go", Content: "package main\n"}, http.StatusOK, &st)
	doJSON(t, http.MethodPost, base+"/open", api.LSPOpenRequest{Path: "main.go", Content: src}, http.StatusOK, &st) // a didChange
	if st.Status != "opened" {
		t.Errorf("open = %+v", st)
	}
	if _, err := os.Stat(filepath.Join(ws, "main.go")); !os.IsNotExist(err) {
		t.Errorf("open wrote main.go to disk (stat error %v)", err)
	}

	var res api.LSPCompletionResult
	doJSON(t, http.MethodPost, base+"/completion", api.LSPCompletionRequest{Path: "main.go", Line: 5, Character: 5}, http.StatusOK, &res)
	var labels []string
	for _, item := range res.Items {
		var it struct {
			Label string `json:"label"`
		}
		if err := json.Unmarshal(item, &it); err != nil {
			t.Fatalf("item %s: %v", item, err)
		}
		labels = append(labels, it.Label)
	}
	if !slices.Contains(labels, "Println") {
		t.Errorf("completion after fmt. = %v, want Println among them", labels)
	}

	for _, c := range []struct {
		path, body string
		want       int
	}{
		{"/completion", `{"path":"main.go","line":-1,"character":0}`, http.StatusUnprocessableEntity},
		{"/completion", `{"path":"/etc/passwd","line":0,"character":0}`, http.StatusBadRequest},
		{"/open", `{"path":"../outside.go","content":""}`, http.StatusBadRequest},
	} {
		if status, body := call(t, http.MethodPost, base+c.path, authed, c.body); status != c.want {
			t.Errorf("POST %s %s = %d %s, want %d", c.path, c.body, status, body, c.want)
		}
	}

	doJSON(t, http.MethodPost, base+"/stop", nil, http.StatusOK, &st)
	if st.Status != "stopped" {
		t.Errorf("stop = %+v", st)
	}
	for _, p := range []string{"/open", "/completion", "/stop"} {
		b := doJSON(t, http.MethodPost, base+p, `{"path":"main.go"}`, http.StatusNotFound, nil)
		if e := decodeError(t, b); e.Hint == "" {
			t.Errorf("POST %s of a stopped server: %+v has no hint", p, e)
		}
	}
	// The stopped server freed its slot.
	doJSON(t, http.MethodPost, url+"/lsp/start", api.LSPStartRequest{Language: api.LanguageGo}, http.StatusCreated, &started)
}

func TestLSPStartRefuses(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	env := append(SafeEnv(ws), "PATH=/nonexistent")
	url, _ := newToolServer(t, Options{Workspace: ws, Env: env})
	tests := []struct {
		language, wantMsg string
		wantStatus        int
	}{
		{"cobol", `unsupported language "cobol"`, http.StatusUnprocessableEntity},
		{"go", "gopls is not installed", http.StatusBadRequest},
		{"python", "pyright-langserver is not installed", http.StatusBadRequest},
		{"typescript", "typescript-language-server is not installed", http.StatusBadRequest},
	}
	for _, tt := range tests {
		body := doJSON(t, http.MethodPost, url+"/lsp/start", api.LSPStartRequest{Language: tt.language}, tt.wantStatus, nil)
		if e := decodeError(t, body); !strings.Contains(e.Message, tt.wantMsg) {
			t.Errorf("start %s: %q, want it to contain %q", tt.language, e.Message, tt.wantMsg)
		}
	}
}

func TestCompletionItems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{`null`, []string{}},
		{``, []string{}},
		{`[]`, []string{}},
		{`[{"label":"a"},{"label":"b"}]`, []string{`{"label":"a"}`, `{"label":"b"}`}},
		{`{"isIncomplete":false,"items":[{"label":"c"}]}`, []string{`{"label":"c"}`}},
		{`{"isIncomplete":true}`, []string{}},
	}
	for _, tt := range tests {
		items, err := completionItems(json.RawMessage(tt.in))
		if err != nil {
			t.Errorf("completionItems(%s): %v", tt.in, err)
			continue
		}
		got := []string{}
		for _, it := range items {
			got = append(got, string(it))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("completionItems(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
	if _, err := completionItems(json.RawMessage(`"x"`)); err == nil {
		t.Errorf("completionItems of a string: no error")
	}
}
