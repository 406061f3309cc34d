package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/tools"
)

// TestOptInToolsInSandbox (issue 23, acceptance 2 without the browser)
// through the real server, the local driver and the hosted MCP endpoint:
// run_tests reports a failing pytest test and a failing go test with
// file and line, node_interpreter keeps state across calls, and pty_exec
// runs a program on a terminal.
func TestOptInToolsInSandbox(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("the local driver's jails need root")
	}
	s := servertest.New(t)
	re := &realEnv{t: t, s: s}
	resp, body := re.do("POST", "/v1/sandboxes", s.APIKey, strings.NewReader(`{}`))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &re.sb)
	py := "def test_ok():\n    assert 1 + 1 == 2\n\n\ndef test_bad():\n    total = 1 + 1\n    assert total == 3, 'total was wrong'\n"
	if resp, body := re.do("POST", re.path("/files"), s.APIKey, jsonBody(t, api.FileCreateRequest{Path: "/workspace/py/test_calc.py", Content: py})); resp.StatusCode/100 != 2 {
		t.Fatalf("write the pytest file: %d %s", resp.StatusCode, body)
	}
	// The Go tests are compiled here (a cold build cache in the sandbox
	// takes a minute on two cores) and run there under test2json, which is
	// what `go test -json` runs too.
	goTest, test2json := buildGoTest(t)
	for name, bin := range map[string]string{"calc.test": goTest, "test2json": test2json} {
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if resp, body := re.do("PUT", re.path("/files/raw?path=/workspace/gomod/"+name), s.APIKey, bytes.NewReader(b)); resp.StatusCode/100 != 2 {
			t.Fatalf("upload %s: %d %s", name, resp.StatusCode, body)
		}
	}

	call := func(tool string, args map[string]any) string {
		t.Helper()
		args["session_id"] = re.sb.ID
		a, _ := json.Marshal(args)
		rpc := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, a)
		req, _ := http.NewRequest("POST", s.BaseURL+"/mcp/?enable=run_tests,node_interpreter,pty_exec,browser_navigate,browser_exec,browser_close", strings.NewReader(rpc))
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Result struct {
				Content []struct{ Text string }
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Result.Content) != 1 {
			t.Fatalf("%s: %d %v %+v", tool, resp.StatusCode, err, out)
		}
		return out.Result.Content[0].Text
	}
	report := func(text string) tools.TestReport {
		t.Helper()
		var rep tools.TestReport
		if err := json.Unmarshal([]byte(text), &rep); err != nil {
			t.Fatalf("run_tests did not answer JSON: %v\n%s", err, text)
		}
		return rep
	}

	pyRep := report(call("run_tests", map[string]any{"command": "cd /workspace/py && python3 -m pytest -q -p no:cacheprovider"}))
	if !pyRep.Parsed || pyRep.Passed != 1 || pyRep.Failed != 1 || len(pyRep.Failures) != 1 ||
		pyRep.Failures[0].File != "test_calc.py" || pyRep.Failures[0].Line != 7 || !strings.Contains(pyRep.Failures[0].Message, "total was wrong") {
		t.Errorf("pytest: %+v\n%s", pyRep, pyRep.Output)
	}
	goRep := report(call("run_tests", map[string]any{
		"command":   "cd /workspace/gomod && chmod +x calc.test test2json && ./calc.test -test.v=test2json 2>&1 | ./test2json -t -p calc",
		"framework": "go",
	}))
	if !goRep.Parsed || goRep.Passed != 1 || goRep.Failed != 1 || len(goRep.Failures) != 1 ||
		goRep.Failures[0].File != "calc_test.go" || goRep.Failures[0].Line != 8 || goRep.Failures[0].Message != "sum = 2, want 3" {
		t.Errorf("go test: %+v\n%s", goRep, goRep.Output)
	}

	if text := call("node_interpreter", map[string]any{"code": "var counter = 41; function bump() { return ++counter }"}); text != "(no output)" {
		t.Errorf("node first call: %q", text)
	}
	if text := call("node_interpreter", map[string]any{"code": "console.log('bumping'); bump()"}); text != "bumping\n42" {
		t.Errorf("node keeps state: %q", text)
	}

	if text := call("pty_exec", map[string]any{"command": `sh -c 'test -t 0 && printf "name? " && read n && echo "hi $n"'`, "input_text": "ada\n"}); !strings.Contains(text, "hi ada") {
		t.Errorf("pty_exec: %q", text)
	}

	// The browser tools on a page served inside the sandbox.
	page := `<html><head><title>inside</title></head><body style="margin:0;background:#ff0000"><p id="p">served in the sandbox</p></body></html>`
	if resp, body := re.do("POST", re.path("/files"), s.APIKey, jsonBody(t, api.FileCreateRequest{Path: "/workspace/site/index.html", Content: page})); resp.StatusCode/100 != 2 {
		t.Fatalf("write the page: %d %s", resp.StatusCode, body)
	}
	if resp, body := re.do("POST", re.path("/processes"), s.APIKey, jsonBody(t, api.ProcessStartRequest{
		Command: "cd /workspace/site && exec python3 -m http.server 8000 --bind 127.0.0.1", MaxRuntimeSeconds: 600,
	})); resp.StatusCode != http.StatusCreated {
		t.Fatalf("start the web server: %d %s", resp.StatusCode, body)
	}
	var nav string
	// Until the server listens: python3's start takes seconds on a loaded
	// machine.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if nav = call("browser_navigate", map[string]any{"url": "http://127.0.0.1:8000/"}); strings.HasPrefix(nav, "Loaded") {
			break
		}
	}
	if nav != "Loaded http://127.0.0.1:8000/ (status 200)\nTitle: inside" {
		t.Fatalf("browser_navigate: %q", nav)
	}
	if text := call("browser_exec", map[string]any{"script": "document.getElementById('p').textContent"}); text != `"served in the sandbox"` {
		t.Errorf("browser_exec: %q", text)
	}
	img := callImage(t, s, re.sb.ID, "browser_screenshot")
	if c := color.RGBAModel.Convert(img.At(img.Bounds().Dx()/2, img.Bounds().Dy()-5)).(color.RGBA); c.R < 240 || c.G > 15 || c.B > 15 {
		t.Errorf("the page is red; the screenshot's pixel is %v", c)
	}
	if text := call("browser_close", map[string]any{}); text != "Closed the browser" {
		t.Errorf("browser_close: %q", text)
	}
}

// callImage calls a tool over /mcp/ that answers with an image and
// decodes the PNG.
func callImage(t *testing.T, s *servertest.Server, sandboxID, tool string) image.Image {
	t.Helper()
	rpc := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"session_id":%q}}}`, tool, sandboxID)
	req, _ := http.NewRequest("POST", s.BaseURL+"/mcp/?enable=browser_screenshot", strings.NewReader(rpc))
	req.Header.Set("Authorization", "Bearer "+s.APIKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Content []struct{ Type, MimeType, Data, Text string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Result.Content) != 1 || out.Result.Content[0].Type != "image" || out.Result.Content[0].MimeType != "image/png" {
		t.Fatalf("%s: %d %v %+v", tool, resp.StatusCode, err, out)
	}
	b, err := base64.StdEncoding.DecodeString(out.Result.Content[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", tool, err)
	}
	return img
}

// buildGoTest compiles a package with a passing and a failing test
// (calc_test.go:8) into a static test binary, and cmd/test2json.
func buildGoTest(t *testing.T) (testBin, test2json string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"go.mod": "module calc\n\ngo 1.22\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n\n" +
			"func TestBad(t *testing.T) {\n\tt.Errorf(\"sum = %d, want %d\", 2, 3)\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testBin, test2json = filepath.Join(dir, "calc.test"), filepath.Join(dir, "test2json")
	for _, args := range [][]string{{"test", "-c", "-o", testBin, "."}, {"build", "-o", test2json, "cmd/test2json"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	return testBin, test2json
}
