package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestFileRefusalHints: the sidecar's file refusals name CLI commands in
// the CLI's single quotes (sidecar/refusals.go: ls or a watch of a file,
// a missing path); an agent reads them as the tools that do the same when it has
// them, and without the clause when it lacks them, never as a command it
// cannot run.
func TestFileRefusalHints(t *testing.T) {
	// The sidecar's texts (tools does not import it).
	lsFile := &api.Error{
		Status: http.StatusBadRequest, Code: api.CodeNotADirectory, Message: "Not a directory: /workspace/a.txt",
		Hint: "ls lists a directory; read a file with 'boxkite files view PATH', or list the directory it is in",
	}
	missing := &api.Error{
		Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "File not found: /workspace/b.txt",
		Hint: "list what is there with 'boxkite files ls DIR' (relative paths are in /workspace)",
	}
	watchFile := &api.Error{
		Status: http.StatusBadRequest, Code: api.CodeNotADirectory, Message: "Not a directory: /workspace/a.txt",
		Hint: "name a directory; read a file with 'boxkite files view PATH'",
	}
	f := &fake{
		list:  func(api.LsRequest) (*api.LsResult, error) { return nil, lsFile },
		view:  func(api.ViewRequest) (*api.ViewResult, error) { return nil, missing },
		watch: func(api.WatchRequest) (*api.WatchResult, error) { return nil, watchFile },
	}
	ls, _ := Lookup(Default(), "ls")
	view, _ := Lookup(Default(), "view")
	ctx := context.Background()
	lsArgs := json.RawMessage(`{"path":"a.txt"}`)
	viewArgs := json.RawMessage(`{"path":"b.txt"}`)
	watch, _ := Lookup(Default(), "watch_directory")
	editDir := &api.Error{
		Status: http.StatusBadRequest, Code: api.CodeBadRequest, Message: "Path is a directory: /workspace/sub",
		Hint: "name a file in it; list it with 'boxkite files ls DIR'; copy it whole with 'boxkite files cp -r ID:PATH DST'",
	}
	f.strReplace = func(api.StrReplaceRequest) (*api.StrReplaceResult, error) { return nil, editDir }
	editArgs := json.RawMessage(`{"path":"sub","old_str":"x","new_str":"y"}`)
	for _, tt := range []struct {
		name, got, want string
	}{
		{
			"Default's ls of a file", Call(ctx, Default(), f, "ls", lsArgs),
			"Error [not_a_directory]: Not a directory: /workspace/a.txt\nHint: ls lists a directory; read a file with `view`, or list the directory it is in",
		},
		{
			"ls alone of a file", ls.Call(ctx, f, lsArgs),
			"Error [not_a_directory]: Not a directory: /workspace/a.txt\nHint: ls lists a directory",
		},
		{
			"Default's view of a missing file", Call(ctx, Default(), f, "view", viewArgs),
			"Error [not_found]: File not found: /workspace/b.txt\nHint: list what is there with `ls` (relative paths are in /workspace)",
		},
		{
			"view alone of a missing file", view.Call(ctx, f, viewArgs),
			"Error [not_found]: File not found: /workspace/b.txt",
		},
		{
			"Default's watch of a file", Call(ctx, Default(), f, "watch_directory", lsArgs),
			"Error [not_a_directory]: Not a directory: /workspace/a.txt\nHint: name a directory; read a file with `view`",
		},
		{
			"Default's edit of a directory", Call(ctx, Default(), f, "str_replace", editArgs),
			"Error [bad_request]: Path is a directory: /workspace/sub\nHint: name a file in it; list it with `ls`",
		},
		{
			"watch alone of a file", watch.Call(ctx, f, lsArgs),
			"Error [not_a_directory]: Not a directory: /workspace/a.txt\nHint: name a directory",
		},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
