package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// LSP returns the language-server tools of reference §4.2: lsp_start,
// lsp_completion and lsp_stop. Go (gopls) joins the reference's Python and
// TypeScript.
func LSP() []Tool {
	return []Tool{lspStartTool(), lspCompletionTool(), lspStopTool()}
}

// lspMaxItems caps the completions listed; the rest are counted.
const lspMaxItems = 100

func lspStartTool() Tool {
	return Tool{
		Name: "lsp_start",
		Description: "Start a language server in the sandbox (gopls for go, pyright for python, typescript-language-server for typescript) " +
			"and return its lsp_id for lsp_completion. At most 2 run at a time; stop one with lsp_stop.",
		Schema: object(
			strParam("language", "The language to serve.").req().oneOf(api.LanguageGo, api.LanguagePython, api.LanguageTypeScript),
		),
		Handler: runLSPStart,
	}
}

func runLSPStart(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		Language string `json:"language"`
	}
	if msg := decode("lsp_start", args, &in); msg != "" {
		return msg, nil
	}
	ls, ok := sb.(LanguageServers)
	if !ok {
		return unsupported("language servers"), nil
	}
	res, err := ls.LSPStart(ctx, api.LSPStartRequest{Language: in.Language})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	return fmt.Sprintf("Started language server %s for %s", res.LSPID, in.Language), nil
}

func lspCompletionTool() Tool {
	return Tool{
		Name: "lsp_completion",
		Description: "List code completions at a position of a file in the sandbox, from a language server started with lsp_start. " +
			"The file's current content on disk is sent to the server first. line and character are 0-based.",
		Schema: object(
			strParam("lsp_id", "The id lsp_start returned.").req(),
			strParam("path", "Path of the source file.").req(),
			intParam("line", "Line of the cursor, 0-based.", 0, 0, 0).dflt(nil).noMax().req(),
			intParam("character", "Column of the cursor in UTF-16 code units, 0-based.", 0, 0, 0).dflt(nil).noMax().req(),
		),
		Handler: runLSPCompletion,
	}
}

func runLSPCompletion(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		ID        string `json:"lsp_id"`
		Path      string `json:"path"`
		Line      int    `json:"line"`
		Character int    `json:"character"`
	}
	if msg := decode("lsp_completion", args, &in); msg != "" {
		return msg, nil
	}
	switch msg := checkID("lsp_id", in.ID); {
	case msg != "":
		return msg, nil
	case strings.TrimSpace(in.Path) == "":
		return "Error: path must not be empty", nil
	case in.Line < 0 || in.Character < 0:
		return "Error: line and character are 0-based and must not be negative", nil
	}
	ls, ok := sb.(LanguageServers)
	if !ok {
		return unsupported("language servers"), nil
	}
	file, err := sb.View(ctx, api.ViewRequest{Path: in.Path})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	if file.IsDirectory {
		return fmt.Sprintf("Error: %s is a directory", in.Path), nil
	}
	if _, cut := cutMark(file.Content); cut {
		return fmt.Sprintf("Error: %s is larger than 100 KiB, too large to send to the language server", in.Path), nil
	}
	if text, done, err := result(ctx, ls.LSPOpen(ctx, in.ID, api.LSPOpenRequest{Path: in.Path, Content: file.Content})); done {
		return text, err
	}
	res, err := ls.LSPCompletion(ctx, in.ID, api.LSPCompletionRequest{Path: in.Path, Line: in.Line, Character: in.Character})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	return completionText(res.Items), nil
}

// completionItem is what lsp_completion shows of an LSP CompletionItem.
type completionItem struct {
	Label      string `json:"label"`
	Kind       int    `json:"kind"`
	Detail     string `json:"detail"`
	InsertText string `json:"insertText"`
}

// kindName names an LSP CompletionItemKind (1..25), or returns "".
func kindName(k int) string {
	names := [...]string{
		"", "Text", "Method", "Function", "Constructor", "Field", "Variable", "Class", "Interface",
		"Module", "Property", "Unit", "Value", "Enum", "Keyword", "Snippet", "Color", "File", "Reference", "Folder",
		"EnumMember", "Constant", "Struct", "Event", "Operator", "TypeParameter",
	}
	if k < 0 || k >= len(names) {
		return ""
	}
	return names[k]
}

// completionText lists items as "- label (Kind): detail", with the insert
// text when it differs from the label.
func completionText(items []json.RawMessage) string {
	var lines []string
	for _, raw := range items {
		if len(lines) == lspMaxItems {
			lines = append(lines, fmt.Sprintf("... and %d more", len(items)-lspMaxItems))
			break
		}
		var it completionItem
		if json.Unmarshal(raw, &it) != nil || it.Label == "" {
			continue // not a CompletionItem; nothing useful to show
		}
		line := "- " + it.Label
		if k := kindName(it.Kind); k != "" {
			line += " (" + k + ")"
		}
		if it.Detail != "" {
			line += ": " + it.Detail
		}
		if it.InsertText != "" && it.InsertText != it.Label {
			line += "  insert: " + it.InsertText
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return "(no completions)"
	}
	return strings.Join(lines, "\n")
}

func lspStopTool() Tool {
	return Tool{
		Name:        "lsp_stop",
		Description: "Stop a language server started with lsp_start.",
		Schema: object(
			strParam("lsp_id", "The id lsp_start returned.").req(),
		),
		Handler: runLSPStop,
	}
}

func runLSPStop(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		ID string `json:"lsp_id"`
	}
	if msg := decode("lsp_stop", args, &in); msg != "" {
		return msg, nil
	}
	if msg := checkID("lsp_id", in.ID); msg != "" {
		return msg, nil
	}
	ls, ok := sb.(LanguageServers)
	if !ok {
		return unsupported("language servers"), nil
	}
	if text, done, err := result(ctx, ls.LSPStop(ctx, in.ID)); done {
		return text, err
	}
	return "Stopped language server " + in.ID, nil
}
