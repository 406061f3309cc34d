package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

func TestFileCreate(t *testing.T) {
	runTool(t, "file_create", []toolCase{
		{
			name: "created",
			args: `{"path":"src/a.py","content":"print(1)\n"}`,
			fake: fake{writeFile: func(r api.FileCreateRequest) (*api.FileCreateResult, error) {
				return &api.FileCreateResult{Path: "/workspace/src/a.py", Size: int64(len(r.Content)), Created: true}, nil
			}},
			want:  "Created file: /workspace/src/a.py (9 bytes)",
			calls: []call{{"WriteFile", api.FileCreateRequest{Path: "src/a.py", Content: "print(1)\n"}}},
		},
		{
			name: "empty content is a file too",
			args: `{"path":"pkg/__init__.py","content":""}`,
			fake: fake{writeFile: func(api.FileCreateRequest) (*api.FileCreateResult, error) {
				return &api.FileCreateResult{Size: 0, Created: true}, nil
			}},
			want:  "Created file: pkg/__init__.py (0 bytes)",
			calls: []call{{"WriteFile", api.FileCreateRequest{Path: "pkg/__init__.py"}}},
		},
		{
			name: "read-only",
			args: `{"path":"/mnt/skills/x","content":"y"}`,
			fake: fake{writeFile: func(api.FileCreateRequest) (*api.FileCreateResult, error) {
				return nil, apiErr(http.StatusForbidden, api.CodePermissionDenied, "Cannot write to read-only path: /mnt/skills/x", "")
			}},
			want:  "Error [permission_denied]: Cannot write to read-only path: /mnt/skills/x",
			calls: []call{{"WriteFile", api.FileCreateRequest{Path: "/mnt/skills/x", Content: "y"}}},
		},
		{name: "no path", args: `{"path":" ","content":"y"}`, want: "Error: path must not be empty"},
		{name: "missing content", args: `{"path":"a"}`, want: `Error: file_create needs the parameter "content"`},
		{
			// Under the 10 MiB of content, but 18 MiB as JSON: refused
			// before the call, saying why, instead of the server's 413.
			name: "9 MiB of newlines",
			args: fmt.Sprintf(`{"path":"a","content":%q}`, strings.Repeat("\n", 9<<20)),
			want: fmt.Sprintf("Error: content is %d bytes, but %d as JSON (newlines, quotes, backslashes and tabs take 2 bytes there, other control characters and <, >, & 6), over the 16 MiB limit of a request body\n"+
				"Hint: write the file in parts: file_create with the first part, then append the rest in smaller pieces with bash_tool (cat >> FILE)", 9<<20, 2*(9<<20)+2+3+len(`{"path":,"content":,"description":}`)+2),
		},
	})
}

func TestView(t *testing.T) {
	ret := func(r api.ViewResult) func(api.ViewRequest) (*api.ViewResult, error) {
		return func(api.ViewRequest) (*api.ViewResult, error) { return &r, nil }
	}
	viewCall := func(p string, start, end int) call {
		return call{"View", api.ViewRequest{Path: p, ViewRange: []int{start, end}}}
	}
	notFound := apiErr(http.StatusNotFound, api.CodeNotFound, "File not found: x.py", "")
	big := strings.Repeat("a", api.MaxViewOutput)
	runTool(t, "view", []toolCase{
		{
			name:  "defaults send 1-100",
			args:  `{"path":"a.py"}`,
			fake:  fake{view: ret(api.ViewResult{Content: "import os\n\nprint(os.getcwd())", Lines: 3})},
			want:  "File: a.py (lines 1-3 of 3)\n     1\timport os\n     2\t\n     3\tprint(os.getcwd())",
			calls: []call{viewCall("a.py", 1, 100)},
		},
		{
			name:  "a range in the middle",
			args:  `{"path":"a.py","start_line":9,"end_line":10}`,
			fake:  fake{view: ret(api.ViewResult{Content: "nine\nten", Lines: 250})},
			want:  "File: a.py (lines 9-10 of 250)\n     9\tnine\n    10\tten",
			calls: []call{viewCall("a.py", 9, 10)},
		},
		{
			name:  "to the end",
			args:  `{"path":"a.py","start_line":2,"end_line":-1}`,
			fake:  fake{view: ret(api.ViewResult{Content: "b\nc", Lines: 3})},
			want:  "File: a.py (lines 2-3 of 3)\n     2\tb\n     3\tc",
			calls: []call{viewCall("a.py", 2, -1)},
		},
		{
			name:  "end past the end",
			args:  `{"path":"a.py","end_line":500}`,
			fake:  fake{view: ret(api.ViewResult{Content: "a", Lines: 1})},
			want:  "File: a.py (lines 1-1 of 1)\n     1\ta",
			calls: []call{viewCall("a.py", 1, 500)},
		},
		{
			name:  "start past the end",
			args:  `{"path":"a.py","start_line":7,"end_line":9}`,
			fake:  fake{view: ret(api.ViewResult{Lines: 3})},
			want:  "Error: start_line 7 is past the end of a.py (3 lines)",
			calls: []call{viewCall("a.py", 7, 9)},
		},
		{
			name:  "start past 100 moves the default window",
			args:  `{"path":"a.py","start_line":150}`,
			fake:  fake{view: ret(api.ViewResult{Content: "x", Lines: 150})},
			want:  "File: a.py (lines 150-150 of 150)\n   150\tx",
			calls: []call{viewCall("a.py", 150, 249)},
		},
		{
			name: "end before start",
			args: `{"path":"a.py","start_line":7,"end_line":3}`,
			want: "Error: end_line 3 is before start_line 7",
		},
		{
			name:  "empty file",
			args:  `{"path":"e.txt"}`,
			fake:  fake{view: ret(api.ViewResult{Lines: 0})},
			want:  "File is empty: e.txt",
			calls: []call{viewCall("e.txt", 1, 100)},
		},
		{
			name:  "directory",
			args:  `{"path":"src"}`,
			fake:  fake{view: ret(api.ViewResult{IsDirectory: true, Entries: []string{"a.go", "b"}})},
			want:  "Directory: src\n\na.go\nb",
			calls: []call{viewCall("src", 1, 100)},
		},
		{
			name:  "empty directory",
			args:  `{"path":"src"}`,
			fake:  fake{view: ret(api.ViewResult{IsDirectory: true})},
			want:  "Directory: src\n\n(empty)",
			calls: []call{viewCall("src", 1, 100)},
		},
		{
			name:  "truncated at 100 KiB",
			args:  `{"path":"big.txt"}`,
			fake:  fake{view: ret(api.ViewResult{Content: big + truncatedMark, Lines: 1})},
			want:  "File: big.txt (lines 1-1 of 1)\n     1\t" + big + "\n... (output truncated at 100 KiB; view a smaller range)",
			calls: []call{viewCall("big.txt", 1, 100)},
		},
		{
			name:  "a small file that ends like the mark is not truncated",
			args:  `{"path":"t.txt"}`,
			fake:  fake{view: ret(api.ViewResult{Content: "x" + truncatedMark, Lines: 2})},
			want:  "File: t.txt (lines 1-2 of 2)\n     1\tx\n     2\t... (truncated)",
			calls: []call{viewCall("t.txt", 1, 100)},
		},
		{
			name: "not found",
			args: `{"path":"x.py"}`,
			fake: fake{view: func(api.ViewRequest) (*api.ViewResult, error) {
				return nil, notFound
			}},
			want:  "Error [not_found]: File not found: x.py",
			calls: []call{viewCall("x.py", 1, 100)},
		},
		{
			name: "not found, found with plain spaces",
			args: `{"path":"Shot at 9.41.00\u202fAM.txt"}`,
			fake: fake{view: func(r api.ViewRequest) (*api.ViewResult, error) {
				if strings.Contains(r.Path, "\u202f") {
					return nil, notFound
				}
				return &api.ViewResult{Content: "hi", Lines: 1}, nil
			}},
			want:  "File: Shot at 9.41.00 AM.txt (lines 1-1 of 1)\n     1\thi",
			calls: []call{viewCall("Shot at 9.41.00\u202fAM.txt", 1, 100), viewCall("Shot at 9.41.00 AM.txt", 1, 100)},
		},
		{
			name: "binary",
			args: `{"path":"a.bin"}`,
			fake: fake{view: func(api.ViewRequest) (*api.ViewResult, error) {
				return nil, apiErr(http.StatusUnprocessableEntity, api.CodeValidation, "File is not UTF-8 text (binary?): a.bin", "inspect it with exec")
			}},
			want:  "Error [validation_error]: File is not UTF-8 text (binary?): a.bin\nHint: inspect it with exec",
			calls: []call{viewCall("a.bin", 1, 100)},
		},
		{
			name: "image",
			args: `{"path":"plot.PNG"}`,
			want: "Error: plot.PNG is an image; view shows text. Use bash_tool (e.g. `file`, `identify`) to inspect it or present_files to hand it to the user.",
		},
	})
}

func TestStrReplace(t *testing.T) {
	srCall := func(p, old, new string) []call {
		return []call{{"StrReplace", api.StrReplaceRequest{Path: p, OldStr: old, NewStr: new}}}
	}
	ret := func(r api.StrReplaceResult) func(api.StrReplaceRequest) (*api.StrReplaceResult, error) {
		return func(api.StrReplaceRequest) (*api.StrReplaceResult, error) { return &r, nil }
	}
	runTool(t, "str_replace", []toolCase{
		{
			name:  "replaced once",
			args:  `{"path":"a.py","old_str":"x = 1","new_str":"x = 2"}`,
			fake:  fake{strReplace: ret(api.StrReplaceResult{Path: "/workspace/a.py", Replaced: true, Occurrences: 1})},
			want:  "Replaced 1 occurrence in /workspace/a.py",
			calls: srCall("a.py", "x = 1", "x = 2"),
		},
		{
			name:  "delete text",
			args:  `{"path":"a.py","old_str":"debug()\n","new_str":""}`,
			fake:  fake{strReplace: ret(api.StrReplaceResult{Path: "/workspace/a.py", Replaced: true, Occurrences: 1})},
			want:  "Replaced 1 occurrence in /workspace/a.py",
			calls: srCall("a.py", "debug()\n", ""),
		},
		{
			name:  "zero occurrences",
			args:  `{"path":"a.py","old_str":"y","new_str":"z"}`,
			fake:  fake{strReplace: ret(api.StrReplaceResult{Path: "/workspace/a.py"})},
			want:  "Error: old_str not found in /workspace/a.py\nHint: view the file and copy the exact text, including whitespace and indentation.",
			calls: srCall("a.py", "y", "z"),
		},
		{
			name: "many occurrences",
			args: `{"path":"a.py","old_str":"i","new_str":"j"}`,
			fake: fake{strReplace: func(api.StrReplaceRequest) (*api.StrReplaceResult, error) {
				return nil, apiErr(http.StatusBadRequest, api.CodeBadRequest, "old_str appears 3 times. Must appear exactly once.", "add surrounding context to old_str, or set replace_all")
			}},
			want:  "Error [bad_request]: old_str appears 3 times. Must appear exactly once.\nHint: include more surrounding lines in old_str so it matches exactly once.",
			calls: srCall("a.py", "i", "j"),
		},
		{
			// Another 400 than many occurrences keeps its own hint.
			name: "path outside the roots",
			args: `{"path":"/etc/passwd","old_str":"i","new_str":"j"}`,
			fake: fake{strReplace: func(api.StrReplaceRequest) (*api.StrReplaceResult, error) {
				return nil, apiErr(http.StatusBadRequest, api.CodeBadRequest, "Invalid path outside allowed roots: /etc/passwd", "use a path under /workspace")
			}},
			want:  "Error [bad_request]: Invalid path outside allowed roots: /etc/passwd\nHint: use a path under /workspace",
			calls: srCall("/etc/passwd", "i", "j"),
		},
		{
			name: "a directory",
			args: `{"path":"dd","old_str":"i","new_str":"j"}`,
			fake: fake{strReplace: func(api.StrReplaceRequest) (*api.StrReplaceResult, error) {
				return nil, apiErr(http.StatusBadRequest, api.CodeBadRequest, "Path is a directory: dd", "")
			}},
			want:  "Error [bad_request]: Path is a directory: dd",
			calls: srCall("dd", "i", "j"),
		},
		{
			name: "file not found",
			args: `{"path":"b.py","old_str":"i","new_str":"j"}`,
			fake: fake{strReplace: func(api.StrReplaceRequest) (*api.StrReplaceResult, error) {
				return nil, apiErr(http.StatusNotFound, api.CodeNotFound, "File not found: b.py", "")
			}},
			want:  "Error [not_found]: File not found: b.py",
			calls: srCall("b.py", "i", "j"),
		},
		{name: "empty old_str", args: `{"path":"a","old_str":"","new_str":"j"}`, want: "Error: old_str must not be empty"},
		{name: "same strings", args: `{"path":"a","old_str":"j","new_str":"j"}`, want: "Error: old_str and new_str are the same; nothing would change"},
		{
			name: "old_str too long",
			args: fmt.Sprintf(`{"path":"a","old_str":%q,"new_str":"j"}`, strings.Repeat("x", 100<<10+1)),
			want: "Error: old_str is longer than 100 KiB; replace smaller pieces, or rewrite the file with file_create",
		},
	})
}

func TestPresentFiles(t *testing.T) {
	runTool(t, "present_files", []toolCase{
		{
			name: "one found, one missing",
			args: `{"paths":["out/report.pdf","nope.txt"]}`,
			fake: fake{present: func(api.PresentFilesRequest) (*api.PresentFilesResult, error) {
				return &api.PresentFilesResult{Files: []api.PresentedFile{{
					FilePath: "/mnt/user-data/outputs/report.pdf", StorageKey: "outputs/report.pdf", Size: 1234, ContentType: "application/pdf",
				}}}, nil
			}},
			want:  "Presented 1 of 2 files:\n- **report.pdf** (1234 bytes): Ready for download\n- nope.txt: File not found or not synced",
			calls: []call{{"PresentFiles", api.PresentFilesRequest{Filepaths: []string{"out/report.pdf", "nope.txt"}}}},
		},
		{name: "no paths", args: `{"paths":[]}`, want: "Error: paths must name at least one file"},
		{name: "unsupported", args: `{"paths":["a"]}`, bare: true, want: "Error: this sandbox does not support presenting files"},
	})
}

func TestLs(t *testing.T) {
	runTool(t, "ls", []toolCase{
		{
			name: "entries",
			args: `{}`,
			fake: fake{list: func(api.LsRequest) (*api.LsResult, error) {
				return &api.LsResult{Entries: []api.LsEntry{
					{Path: "/workspace/a.txt", Size: 3},
					{Path: "/workspace/src/", IsDir: true},
				}}, nil
			}},
			want:  "Directory: /\n\n/workspace/a.txt  (3 bytes)\n/workspace/src/",
			calls: []call{{"List", api.LsRequest{Path: "/"}}},
		},
		{
			name: "empty",
			args: `{"path":"hollow"}`,
			fake: fake{list: func(api.LsRequest) (*api.LsResult, error) {
				return &api.LsResult{}, nil
			}},
			want:  "Directory: hollow\n\n(empty)",
			calls: []call{{"List", api.LsRequest{Path: "hollow"}}},
		},
		{
			name: "missing",
			args: `{"path":"nothing"}`,
			fake: fake{list: func(api.LsRequest) (*api.LsResult, error) {
				return nil, apiErr(http.StatusNotFound, api.CodeNotFound, "Directory not found: nothing", "")
			}},
			want:  "Error [not_found]: Directory not found: nothing",
			calls: []call{{"List", api.LsRequest{Path: "nothing"}}},
		},
		{
			name: "outside the roots",
			args: `{"path":"/etc"}`,
			fake: fake{list: func(api.LsRequest) (*api.LsResult, error) {
				return nil, apiErr(http.StatusBadRequest, api.CodeBadRequest, "Invalid path outside allowed roots: /etc", "")
			}},
			want:  "Error [bad_request]: Invalid path outside allowed roots: /etc",
			calls: []call{{"List", api.LsRequest{Path: "/etc"}}},
		},
	})
}

func TestGlob(t *testing.T) {
	runTool(t, "glob", []toolCase{
		{
			name: "matches, truncated",
			args: `{"pattern":"**/*.go","path":"src"}`,
			fake: fake{glob: func(api.GlobRequest) (*api.GlobResult, error) {
				return &api.GlobResult{Matches: []api.GlobMatch{{Path: "/workspace/src/a.go"}, {Path: "/workspace/src/b/c.go"}}, Truncated: true}, nil
			}},
			want:  "Matches for '**/*.go' under src:\n\n/workspace/src/a.go\n/workspace/src/b/c.go\n\n(results truncated -- narrow the pattern or the path)",
			calls: []call{{"Glob", api.GlobRequest{Pattern: "**/*.go", Path: "src"}}},
		},
		{
			name: "none",
			args: `{"pattern":"*.rs"}`,
			fake: fake{glob: func(api.GlobRequest) (*api.GlobResult, error) {
				return &api.GlobResult{}, nil
			}},
			want:  "No files matching '*.rs' under /",
			calls: []call{{"Glob", api.GlobRequest{Pattern: "*.rs", Path: "/"}}},
		},
		{name: "empty pattern", args: `{"pattern":""}`, want: "Error: pattern must not be empty"},
	})
}

func TestGrep(t *testing.T) {
	ret := func(r api.GrepResult) func(api.GrepRequest) (*api.GrepResult, error) {
		return func(api.GrepRequest) (*api.GrepResult, error) { return &r, nil }
	}
	runTool(t, "grep", []toolCase{
		{
			name: "matches",
			args: `{"pattern":"func main","glob":"*.go"}`,
			fake: fake{grep: ret(api.GrepResult{Matches: []api.GrepMatch{
				{Path: "/workspace/main.go", Line: 7, Text: "func main() {"},
				{Path: "/workspace/cmd/x/main.go", Line: 12, Text: "func main() {"},
			}})},
			want:  "/workspace/main.go:7: func main() {\n/workspace/cmd/x/main.go:12: func main() {",
			calls: []call{{"Grep", api.GrepRequest{Pattern: "func main", Path: "/", Glob: "*.go", MaxMatches: 500}}},
		},
		{
			name:  "long line cut",
			args:  `{"pattern":"x"}`,
			fake:  fake{grep: ret(api.GrepResult{Matches: []api.GrepMatch{{Path: "min.js", Line: 1, Text: strings.Repeat("é", 300)}}})},
			want:  "min.js:1: " + strings.Repeat("é", 250) + "… (100 more bytes)",
			calls: []call{{"Grep", api.GrepRequest{Pattern: "x", Path: "/", MaxMatches: 500}}},
		},
		{
			name:  "truncated",
			args:  `{"pattern":"x","max_matches":1}`,
			fake:  fake{grep: ret(api.GrepResult{Matches: []api.GrepMatch{{Path: "a", Line: 1, Text: "x"}}, Truncated: true})},
			want:  "a:1: x\n\n(results truncated -- raise max_matches (max 5000) or narrow path or glob)",
			calls: []call{{"Grep", api.GrepRequest{Pattern: "x", Path: "/", MaxMatches: 1}}},
		},
		{
			name:  "max_matches clamped",
			args:  `{"pattern":"x","max_matches":99999,"path":"src"}`,
			fake:  fake{grep: ret(api.GrepResult{})},
			want:  "No matches for 'x' under src",
			calls: []call{{"Grep", api.GrepRequest{Pattern: "x", Path: "src", MaxMatches: 5000}}},
		},
		{
			name:  "none with glob",
			args:  `{"pattern":"TODO","glob":"*.py","max_matches":0}`,
			fake:  fake{grep: ret(api.GrepResult{})},
			want:  "No matches for 'TODO' under / in files matching '*.py'",
			calls: []call{{"Grep", api.GrepRequest{Pattern: "TODO", Path: "/", Glob: "*.py", MaxMatches: 1}}},
		},
		{
			name: "invalid regex",
			args: `{"pattern":"("}`,
			fake: fake{grep: func(api.GrepRequest) (*api.GrepResult, error) {
				return nil, apiErr(http.StatusUnprocessableEntity, api.CodeValidation, "Invalid regex pattern: missing closing )", "patterns are RE2")
			}},
			want:  "Error [validation_error]: Invalid regex pattern: missing closing )\nHint: patterns are RE2",
			calls: []call{{"Grep", api.GrepRequest{Pattern: "(", Path: "/", MaxMatches: 500}}},
		},
		{
			name:  "timed out",
			args:  `{"pattern":"x"}`,
			fake:  fake{grep: ret(api.GrepResult{Truncated: true, Error: "Search timed out after 10s -- narrow path or glob"})},
			want:  "Error: Search timed out after 10s -- narrow path or glob",
			calls: []call{{"Grep", api.GrepRequest{Pattern: "x", Path: "/", MaxMatches: 500}}},
		},
		{
			name:  "error after some matches",
			args:  `{"pattern":"x"}`,
			fake:  fake{grep: ret(api.GrepResult{Matches: []api.GrepMatch{{Path: "a", Line: 2, Text: "x"}}, Truncated: true, Error: "Search stopped after 100 MiB"})},
			want:  "a:2: x\n\nError: Search stopped after 100 MiB\n\n(results truncated -- raise max_matches (max 5000) or narrow path or glob)",
			calls: []call{{"Grep", api.GrepRequest{Pattern: "x", Path: "/", MaxMatches: 500}}},
		},
	})
}

// TestListingsCapped: ls and glob answers are cut at 100 KiB, as view's
// content is, with a note saying how many entries are shown and how to
// narrow the listing (a 10,000-entry directory gave some 330 KB).
func TestListingsCapped(t *testing.T) {
	const n = 10000
	entries := make([]api.LsEntry, n)
	for i := range entries {
		entries[i] = api.LsEntry{Path: fmt.Sprintf("/workspace/data/part-%05d.csv", i), Size: 12345}
	}
	for _, tt := range []struct {
		tool, args, note string
		fake             fake
	}{
		{
			"ls", `{"path":"data"}`, " of 10000 entries shown -- list a subdirectory, or find files with glob and a narrower pattern)",
			fake{list: func(api.LsRequest) (*api.LsResult, error) { return &api.LsResult{Entries: entries}, nil }},
		},
		{
			"glob", `{"pattern":"**/*.csv"}`, " of 10000 matches shown -- narrow the pattern or the path)",
			fake{glob: func(api.GlobRequest) (*api.GlobResult, error) { return &api.GlobResult{Matches: entries}, nil }},
		},
		{
			"glob", `{"pattern":"**/*.csv"}`, " of the first 10000 matches shown -- narrow the pattern or the path)",
			fake{glob: func(api.GlobRequest) (*api.GlobResult, error) {
				return &api.GlobResult{Matches: entries, Truncated: true}, nil
			}},
		},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			tl, _ := Lookup(All(), tt.tool)
			f := tt.fake
			got := tl.Call(context.Background(), &f, json.RawMessage(tt.args))
			if len(got) > api.MaxViewOutput+200 {
				t.Errorf("%s answered %d bytes, want about %d at most", tt.tool, len(got), api.MaxViewOutput)
			}
			if !strings.HasSuffix(got, tt.note) || !strings.Contains(got, "\n\n(listing cut at 100 KiB: ") {
				t.Errorf("%s answer ends %q, want the note ending %q", tt.tool, got[max(0, len(got)-200):], tt.note)
			}
			if !strings.Contains(got, "/workspace/data/part-00000.csv") {
				t.Errorf("%s answer lost its first entry", tt.tool)
			}
		})
	}
}
