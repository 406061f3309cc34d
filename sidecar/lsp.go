package sidecar

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

const (
	lspStartup  = 20 * time.Second // initialize must answer within
	lspShutdown = 5 * time.Second  // shutdown must answer within, and exit follow within
)

// lspCommand is the language server of a language, speaking LSP on stdio.
func lspCommand(language string) []string {
	switch language {
	case api.LanguageGo:
		return []string{"gopls", "serve"}
	case api.LanguagePython:
		return []string{"pyright-langserver", "--stdio"}
	case api.LanguageTypeScript:
		return []string{"typescript-language-server", "--stdio"}
	}
	return nil
}

// lspTable holds the running language servers.
type lspTable struct {
	h      *Handler
	limits ToolLimits

	mu       sync.Mutex
	byID     map[string]*lspServer
	starting int // slots taken by servers still initializing
}

func newLSPTable(h *Handler, l ToolLimits) *lspTable {
	return &lspTable{h: h, limits: l, byID: map[string]*lspServer{}}
}

// lspServer is one language server process and what it was told.
type lspServer struct {
	id, language string
	cmd          *exec.Cmd
	rpc          *rpcConn
	stderr       *ring // its last words, for errors
	exited       chan struct{}
	gone         bool // set under the table's mu when the process ended

	mu       sync.Mutex
	versions map[string]int // document URI → version last sent
	reaper   *time.Timer
}

// start launches a server for language and initializes it on the workspace.
func (t *lspTable) start(ctx context.Context, language string) (*lspServer, error) {
	argv := lspCommand(language)
	if argv == nil {
		return nil, api.Invalid("language", fmt.Sprintf("unsupported language %q: use go, python or typescript", language), "")
	}
	bin, err := lookPath(t.h.env, argv[0])
	if err != nil {
		return nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest,
			"the %s language server %s is not installed in the sandbox: %v", language, argv[0], err)
	}
	t.mu.Lock()
	if n := len(t.byID) + t.starting; n >= t.limits.MaxLSPServers {
		t.mu.Unlock()
		return nil, api.Errorf(http.StatusTooManyRequests, api.CodeLimitExceeded,
			"too many language servers: %d of %d running", n, t.limits.MaxLSPServers).
			WithHint("stop one with POST /lsp/{id}/stop")
	}
	t.starting++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.starting--
		t.mu.Unlock()
	}()

	s, err := t.launch(ctx, language, bin, argv[1:])
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.gone {
		return nil, api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed,
			"%s language server exited right after starting%s", language, s.lastWords())
	}
	t.byID[s.id] = s
	s.touch(t.limits.LSPIdle)
	return s, nil
}

func (t *lspTable) launch(ctx context.Context, language, bin string, args []string) (*lspServer, error) {
	h := t.h
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("make lsp id: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = h.workspace, h.env
	attr, err := h.sysProcAttr()
	if err != nil {
		return nil, fmt.Errorf("start language server: %w", err)
	}
	cmd.SysProcAttr = attr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start language server: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start language server: %w", err)
	}
	s := &lspServer{
		id: "lsp_" + hex.EncodeToString(b[:]), language: language, cmd: cmd,
		stderr: newRing(8 << 10), exited: make(chan struct{}), versions: map[string]int{},
	}
	cmd.Stderr = s.stderr
	cmd.WaitDelay = time.Second // children that kept stderr open must not hold up the end
	if err := cmd.Start(); err != nil {
		return nil, api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "start %s: %v", bin, err)
	}
	h.oomFirst(cmd.Process.Pid) // it runs the agent's project code, as a command would
	s.rpc = newRPCConn(stdout, stdin)
	go func() {
		_ = waitCmd(cmd)
		// Out of the table before exited closes: whoever waited for the
		// end may start a new server in the freed slot at once.
		t.mu.Lock()
		s.gone = true
		delete(t.byID, s.id)
		t.mu.Unlock()
		close(s.exited)
	}()

	ictx, cancel := context.WithTimeout(ctx, lspStartup)
	defer cancel()
	root := fileURI(h.workspace)
	_, err = s.rpc.call(ictx, "initialize", map[string]any{
		"processId":        os.Getpid(),
		"rootUri":          root,
		"workspaceFolders": []map[string]string{{"uri": root, "name": filepath.Base(h.workspace)}},
		"capabilities": map[string]any{
			"textDocument": map[string]any{
				"completion":      map[string]any{"completionItem": map[string]any{"snippetSupport": false}},
				"synchronization": map[string]any{"didSave": false},
			},
			"workspace": map[string]any{"workspaceFolders": true, "configuration": true},
		},
	})
	if err == nil {
		err = s.rpc.notify("initialized", map[string]any{})
	}
	if err != nil {
		s.kill()
		return nil, api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed,
			"%s language server did not start: %v%s", language, err, s.lastWords())
	}
	return s, nil
}

// lastWords is the tail of the server's stderr, for error messages.
func (s *lspServer) lastWords() string {
	if msg := strings.TrimSpace(string(s.stderr.bytes())); msg != "" {
		return ": " + msg
	}
	return ""
}

func (s *lspServer) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}

// stop asks the server to shut down and exit, and kills it if it does not.
func (s *lspServer) stop() {
	s.mu.Lock()
	if s.reaper != nil {
		s.reaper.Stop()
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lspShutdown)
	defer cancel()
	if _, err := s.rpc.call(ctx, "shutdown", nil); err == nil {
		_ = s.rpc.notify("exit", nil)
	}
	t := time.NewTimer(lspShutdown)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.kill()
	}
}

// touch arms the idle reaper again.
func (s *lspServer) touch(idle time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reaper == nil {
		s.reaper = time.AfterFunc(idle, s.stop)
		return
	}
	s.reaper.Reset(idle)
}

func (t *lspTable) get(id string) (*lspServer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.byID[id]; ok {
		s.touch(t.limits.LSPIdle)
		return s, nil
	}
	return nil, api.Errorf(http.StatusNotFound, api.CodeNotFound, "LSP server not found").
		WithHint("start one with lsp/start (the lsp_start tool) and pass the lsp_id it answers; an idle one is stopped after " + t.limits.LSPIdle.String())
}

func (t *lspTable) stopAll() {
	t.mu.Lock()
	servers := make([]*lspServer, 0, len(t.byID))
	for _, s := range t.byID {
		servers = append(servers, s)
	}
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.kill)
	}
	wg.Wait()
}

// fileURI is the file: URI of an absolute path.
func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// languageID is the LSP languageId of a document.
func languageID(language, path string) string {
	switch ext := filepath.Ext(path); {
	case language != api.LanguageTypeScript:
		return language
	case ext == ".tsx":
		return "typescriptreact"
	case ext == ".js" || ext == ".mjs" || ext == ".cjs":
		return "javascript"
	case ext == ".jsx":
		return "javascriptreact"
	}
	return "typescript"
}

// open tells the server a document's full text: didOpen the first time,
// a whole-document didChange after.
func (s *lspServer) open(path, content string) error {
	uri := fileURI(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, seen := s.versions[uri]
	var err error
	if !seen {
		err = s.rpc.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
			"uri": uri, "languageId": languageID(s.language, path), "version": 1, "text": content,
		}})
	} else {
		err = s.rpc.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": v + 1},
			"contentChanges": []map[string]string{{"text": content}},
		})
	}
	if err != nil {
		return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "language server: %v%s", err, s.lastWords())
	}
	s.versions[uri] = v + 1
	return nil
}

func (h *Handler) lspStart(w http.ResponseWriter, r *http.Request) error {
	var req api.LSPStartRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	s, err := h.sess.lsp.start(r.Context(), req.Language)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, api.LSPStarted{LSPID: s.id})
}

// lspOpen sends the document to the server only; nothing is written to disk.
// The file routes write files; a server sees unsaved text as the editor's.
func (h *Handler) lspOpen(w http.ResponseWriter, r *http.Request) error {
	s, err := h.sess.lsp.get(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req api.LSPOpenRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	doc, err := h.resolve(req.Path)
	if err != nil {
		return err
	}
	if err := s.open(doc.host, req.Content); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.LSPStatus{Status: "opened"})
}

func (h *Handler) lspCompletion(w http.ResponseWriter, r *http.Request) error {
	s, err := h.sess.lsp.get(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req api.LSPCompletionRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Line < 0 || req.Character < 0 {
		return api.Invalid("line", "line and character are 0-based and must not be negative", "")
	}
	doc, err := h.resolve(req.Path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.sess.limits.LSPTimeout)
	defer cancel()
	result, err := s.rpc.call(ctx, "textDocument/completion", map[string]any{
		"textDocument": map[string]string{"uri": fileURI(doc.host)},
		"position":     map[string]int{"line": req.Line, "character": req.Character},
		"context":      map[string]int{"triggerKind": 1}, // invoked
	})
	if err != nil {
		return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "completion: %v", err)
	}
	items, err := completionItems(result)
	if err != nil {
		return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "completion: %v", err)
	}
	return writeJSON(w, http.StatusOK, api.LSPCompletionResult{Items: items})
}

func (h *Handler) lspStop(w http.ResponseWriter, r *http.Request) error {
	s, err := h.sess.lsp.get(r.PathValue("id"))
	if err != nil {
		return err
	}
	s.stop()
	return writeJSON(w, http.StatusOK, api.LSPStatus{Status: "stopped"})
}
