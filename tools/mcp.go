package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// Sandboxes creates, finds and destroys sandboxes (the sandbox lifecycle
// tools of MCP). *client.Client satisfies it, and so does the control
// plane in-process for /mcp/.
type Sandboxes interface {
	CreateSandboxes(ctx context.Context, req api.CreateSandboxRequest) ([]api.Sandbox, error)
	Sandbox(ctx context.Context, id string) (*api.Sandbox, error)
	// ListSandboxesPage returns at most limit of the account's sandboxes,
	// newest first, from cursor (the next of the page before; "" for the
	// first), and the cursor of the page after ("" on the last).
	ListSandboxesPage(ctx context.Context, activeOnly bool, limit int, cursor string) ([]api.Sandbox, string, error)
	DeleteSandbox(ctx context.Context, id string) error
}

// Images builds and manages sandbox images.
type Images interface {
	CreateImage(ctx context.Context, req api.CreateImageRequest) (*api.Image, error)
	GetImage(ctx context.Context, id string) (*api.Image, error)
	// ListImagesPage returns at most limit of the account's images,
	// newest first, from cursor (as ListSandboxesPage).
	ListImagesPage(ctx context.Context, limit int, cursor string) ([]api.Image, string, error)
	DeleteImage(ctx context.Context, id string) error
}

// Volumes manages persistent volumes.
type Volumes interface {
	CreateVolume(ctx context.Context, req api.CreateVolumeRequest) (*api.Volume, error)
	GetVolume(ctx context.Context, id string) (*api.Volume, error)
	ListVolumes(ctx context.Context) ([]api.Volume, error)
	DeleteVolume(ctx context.Context, id string) error
}

// MCPConnections manages grants of egress to MCP catalog hosts.
type MCPConnections interface {
	CreateMCPConnection(ctx context.Context, req api.CreateMCPConnectionRequest) (*api.MCPConnection, error)
	ListMCPConnections(ctx context.Context) ([]api.MCPConnection, error)
	DeleteMCPConnection(ctx context.Context, id string) error
}

// Provider is the account-level surface the MCP tools need besides one
// sandbox: everything of reference §5.1 that is not inside a sandbox.
type Provider interface {
	Sandboxes
	Images
	Volumes
	MCPConnections
	Lifecycle
}

// Binder returns the Sandbox for a sandbox id without calling anything; a
// wrong id shows up as not_found from the first call.
type Binder func(id string) Sandbox

// MCP returns the 31 MCP tools: the 26 of reference §5.1, in its order
// (the account tools over p, and the sandbox tools, each taking
// session_id, over the sandbox bind returns), then pause, resume,
// snapshot, restore and fork (Lifecycle). The sandbox tools are this package's own tools
// with session_id added, so their texts are the same everywhere.
//
// Handlers ignore the Sandbox Call passes them; nil is fine. The opt-in
// tools given (see Enabled) follow, with session_id added.
func MCP(p Provider, bind Binder, optional ...Tool) []Tool {
	m := mcpTools{p: p, bind: bind}
	out := []Tool{
		m.createSandbox(), m.destroySandbox(), m.getSandbox(), m.listSandboxes(),
		m.createImage(), m.getImage(), m.listImages(), m.deleteImage(),
		m.createVolume(), m.getVolume(), m.listVolumes(), m.deleteVolume(),
		m.createMCPConnection(), m.listMCPConnections(), m.deleteMCPConnection(),
		m.exec(), m.session(lspStartTool()), m.lspOpen(), m.session(lspCompletionTool()), m.session(lspStopTool()),
		m.session(fileCreateTool()), m.view(), m.strReplace(), m.session(lsTool()), m.session(globTool()), m.session(grepTool()),
	}
	out = append(out, m.lifecycleTools()...)
	for _, t := range optional {
		out = append(out, m.session(t))
	}
	return out
}

type mcpTools struct {
	p    Provider
	bind Binder
}

// sessionParam is the first parameter of every sandbox tool.
func sessionParam() param {
	return strParam("session_id", "The id of the sandbox, as create_sandbox or list_sandboxes returned it.").req()
}

// withSession returns schema (built by object) with session_id as its first
// and required parameter.
func withSession(schema json.RawMessage) json.RawMessage {
	const head = `{"type":"object","properties":{`
	rest, ok := bytes.CutPrefix(schema, []byte(head))
	if !ok {
		panic("tools: schema not built by object: " + string(schema))
	}
	sp, _ := json.Marshal(sessionParam().schema())
	var b bytes.Buffer
	b.WriteString(head + `"session_id":`)
	b.Write(sp)
	if !bytes.HasPrefix(rest, []byte("}")) {
		b.WriteByte(',')
	}
	if before, after, found := bytes.Cut(rest, []byte(`,"required":[`)); found {
		b.Write(before)
		b.WriteString(`,"required":["session_id",`)
		b.Write(after)
	} else {
		before, after, _ := bytes.Cut(rest, []byte(`,"additionalProperties"`))
		b.Write(before)
		b.WriteString(`,"required":["session_id"],"additionalProperties"`)
		b.Write(after)
	}
	return b.Bytes()
}

// splitSession takes session_id out of args (already checked against the
// schema) and returns it with the remaining arguments.
func splitSession(args json.RawMessage) (string, json.RawMessage, string) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return "", nil, "Error: the arguments must be a JSON object"
	}
	var id string
	if err := json.Unmarshal(m["session_id"], &id); err != nil {
		return "", nil, "Error: session_id must be a string"
	}
	if msg := checkID("session_id", id); msg != "" {
		return "", nil, msg
	}
	delete(m, "session_id")
	rest, err := json.Marshal(m)
	if err != nil {
		return "", nil, fmt.Sprintf("Error: invalid arguments: %v", err)
	}
	return id, rest, ""
}

// session turns a sandbox tool of this package into its MCP form: the same
// name and parameters plus session_id.
func (m mcpTools) session(t Tool) Tool {
	inner := t
	t.Schema = withSession(inner.Schema)
	t.Handler = func(ctx context.Context, _ Sandbox, args json.RawMessage) (string, error) {
		id, rest, msg := splitSession(args)
		if msg != "" {
			return msg, nil
		}
		return inner.Call(ctx, m.bind(id), rest), nil
	}
	return t
}

func (m mcpTools) exec() Tool {
	t := bashTool()
	t.Name = "exec"
	t.Description = "Run a shell command in a sandbox (/bin/sh -c, working directory /workspace) and return its output: " +
		"stdout, then stderr. A non-zero exit is a tool error starting \"Error (exit code N):\" followed by the output."
	t.Handler = bashHandler("exec", hintWithShell)
	return m.session(t)
}

func (m mcpTools) lspOpen() Tool {
	return Tool{
		Name: "lsp_open",
		Description: "Send a file's content to a language server started with lsp_start (the first time opens it, later calls replace it). " +
			"lsp_completion already sends the file's content on disk; use this for content not written to the sandbox.",
		Schema: object(
			sessionParam(),
			strParam("lsp_id", "The id lsp_start returned.").req(),
			strParam("path", "Path of the source file.").req(),
			strParam("content", "The file's complete content.").req(),
		),
		Handler: func(ctx context.Context, _ Sandbox, args json.RawMessage) (string, error) {
			var in struct {
				Session string `json:"session_id"`
				ID      string `json:"lsp_id"`
				Path    string `json:"path"`
				Content string `json:"content"`
			}
			if msg := decode("lsp_open", args, &in); msg != "" {
				return msg, nil
			}
			if msg := firstOf(checkID("session_id", in.Session), checkID("lsp_id", in.ID)); msg != "" {
				return msg, nil
			}
			if strings.TrimSpace(in.Path) == "" {
				return "Error: path must not be empty", nil
			}
			ls, ok := m.bind(in.Session).(LanguageServers)
			if !ok {
				return unsupported("language servers"), nil
			}
			if text, done, err := result(ctx, ls.LSPOpen(ctx, in.ID, api.LSPOpenRequest{Path: in.Path, Content: in.Content})); done {
				return text, err
			}
			return fmt.Sprintf("Opened %s in language server %s (%d bytes)", in.Path, in.ID, len(in.Content)), nil
		},
	}
}

func (m mcpTools) view() Tool {
	t := viewTool()
	t.Description = "Show lines of a text file in a sandbox, numbered, or list a directory. " +
		"view_range [start, end] picks lines (1-based, inclusive; end -1 means to the end of the file); the default is lines 1-100. " + pathHelp
	t.Schema = object(
		sessionParam(),
		strParam("path", "Path of the file or directory.").req(),
		param{name: "view_range", typ: "array", items: "integer", desc: "[start_line, end_line], 1-based and inclusive; end_line -1 shows to the end of the file."},
	)
	inner := viewTool()
	t.Handler = func(ctx context.Context, _ Sandbox, args json.RawMessage) (string, error) {
		var in struct {
			Session   string `json:"session_id"`
			Path      string `json:"path"`
			ViewRange []int  `json:"view_range"`
		}
		if msg := decode("view", args, &in); msg != "" {
			return msg, nil
		}
		if msg := checkID("session_id", in.Session); msg != "" {
			return msg, nil
		}
		if isImage(in.Path) {
			// viewTool's text names bash_tool and present_files, which MCP does not have.
			return fmt.Sprintf("Error: %s is an image; view shows text. Use exec (e.g. `file`, `identify`) to inspect it.", in.Path), nil
		}
		rest := map[string]any{"path": in.Path}
		switch len(in.ViewRange) {
		case 0:
		case 2:
			rest["start_line"], rest["end_line"] = in.ViewRange[0], in.ViewRange[1]
		default:
			return "Error: view_range must be two integers, [start_line, end_line]", nil
		}
		b, _ := json.Marshal(rest) // a string and ints
		return inner.Call(ctx, m.bind(in.Session), b), nil
	}
	return t
}

func (m mcpTools) strReplace() Tool {
	t := strReplaceTool()
	t.Description += " With replace_all, every occurrence is replaced instead."
	t.Schema = object(
		sessionParam(),
		strParam("path", "Path of the file to edit.").req(),
		strParam("old_str", "The exact text to replace; must appear exactly once in the file unless replace_all is set.").req(),
		strParam("new_str", "The text to put in its place (may be empty to delete old_str).").req(),
		boolParam("replace_all", "Replace every occurrence of old_str (default false).", false),
	)
	inner := m.session(strReplaceTool())
	t.Handler = func(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
		var in struct {
			Session    string `json:"session_id"`
			Path       string `json:"path"`
			OldStr     string `json:"old_str"`
			NewStr     string `json:"new_str"`
			ReplaceAll bool   `json:"replace_all"`
		}
		if msg := decode("str_replace", args, &in); msg != "" {
			return msg, nil
		}
		if !in.ReplaceAll {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(args, &m) // decoded above already
			delete(m, "replace_all")
			b, _ := json.Marshal(m)
			return inner.Call(ctx, sb, b), nil
		}
		switch {
		case checkID("session_id", in.Session) != "":
			return checkID("session_id", in.Session), nil
		case strings.TrimSpace(in.Path) == "":
			return "Error: path must not be empty", nil
		case in.OldStr == "":
			return "Error: old_str must not be empty", nil
		case in.OldStr == in.NewStr:
			return "Error: old_str and new_str are the same; nothing would change", nil
		}
		res, err := m.bind(in.Session).StrReplace(ctx, api.StrReplaceRequest{Path: in.Path, OldStr: in.OldStr, NewStr: in.NewStr, ReplaceAll: true})
		if text, done, err := result(ctx, err); done {
			return text, err
		}
		p := orPath(res.Path, in.Path)
		if !res.Replaced || res.Occurrences == 0 {
			return fmt.Sprintf("Error: old_str not found in %s\nHint: view the file and copy the exact text, including whitespace and indentation.", p), nil
		}
		return fmt.Sprintf("Replaced %d occurrence%s in %s", res.Occurrences, plural1(res.Occurrences), p), nil
	}
	return t
}

func firstOf(msgs ...string) string {
	for _, m := range msgs {
		if m != "" {
			return m
		}
	}
	return ""
}

func plural1(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
