package envd

import (
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestE2BHint: /v1's hints that name a boxkite CLI command (as the
// sandbox, snapshot, limit and sidecar errors word them) name the E2B SDK
// call that does the same on the E2B surface; one naming a command with no
// such call is left out; any other hint is kept as it is.
func TestE2BHint(t *testing.T) {
	for _, tt := range []struct{ hint, want string }{
		{"create a new sandbox with `boxkite session create`", "create a new sandbox with `Sandbox.create()`"},
		{"list your sandboxes with `boxkite session ls`", "list your sandboxes with `Sandbox.list()`"},
		{"resume it first: `boxkite session resume sb1`", "resume it first: `Sandbox.connect('sb1')`"},
		{
			"the sandbox started before the server was upgraded; `boxkite session fork sb1` gives a new sandbox with its files that does",
			"the sandbox started before the server was upgraded; `Sandbox.fork('sb1')` gives a new sandbox with its files that does",
		},
		{
			"create a new sandbox with `boxkite session create`; if its removal failed, retry `boxkite session rm sb1`",
			"create a new sandbox with `Sandbox.create()`; if its removal failed, retry `Sandbox.kill('sb1')`",
		},
		{
			"its processes and files are gone; restore a snapshot of it (`boxkite snapshots ls -s sb1`) or create a new sandbox",
			"its processes and files are gone; restore a snapshot of it (`Sandbox.listSnapshots({sandboxId: 'sb1'})`) or create a new sandbox",
		},
		{
			"its processes and files are gone; create a new sandbox with `boxkite session create` (`boxkite log -s sb1` shows its history)",
			"its processes and files are gone; create a new sandbox with `Sandbox.create()` (`GET /v1/sandboxes/sb1/log` shows its history)",
		},
		{
			"the sandbox may have stopped; check it with `boxkite session get` or create a new one",
			"the sandbox may have stopped; check it with `Sandbox.getInfo(id)` or create a new one",
		},
		{
			"delete one with `boxkite snapshots rm ID` (`boxkite snapshots ls` lists them)",
			"delete one with `Sandbox.deleteSnapshot(id)` (`Sandbox.listSnapshots()` lists them)",
		},
		{"restore a completed snapshot; take a new one with `boxkite session snapshot`", "restore a completed snapshot; take a new one with `sbx.createSnapshot()`"},
		{
			"stop a process that holds one (`boxkite ps`, `boxkite kill`), or close a terminal of the sandbox",
			"stop a process that holds one (`sbx.commands.list()`, `sbx.commands.kill(pid)`), or close a terminal of the sandbox",
		},
		{
			"remove sandboxes you no longer need, or raise the limit (boxkite doctor says how)",
			"remove sandboxes you no longer need, or ask the server's operator to raise the limit",
		},
		// No SDK call: left out.
		{"list images with `boxkite images ls`", ""},
		{"move large files with PUT and GET /v1/sandboxes/{id}/files/raw, which stream (boxkite files cp), or edit them with exec", ""},
		// In single quotes, as the sidecar's hints and some of /v1's quote them.
		{"list what is there with 'boxkite files ls DIR' (relative paths are in /workspace)", ""},
		{"resume it first: 'boxkite session resume sb1'", "resume it first: `Sandbox.connect('sb1')`"},
		// The sidecar's file refusals: E2B's home, and the SDK's calls for the CLI's file commands.
		{
			"use a path under /workspace (relative paths start there), /tmp, /mnt/user-data/outputs, /mnt/user-data/uploads or /mnt/skills",
			"use a path under /home/user (relative paths start there), which is /workspace, /tmp, /mnt/user-data/outputs, /mnt/user-data/uploads or /mnt/skills",
		},
		{"name a directory; read a file with 'boxkite files view PATH'", "name a directory; read a file with `sbx.files.read(path)`"},
		{"copy a directory with -r: 'boxkite files cp -r ID:PATH DST'", "list it with `sbx.files.list(path)` and read its files one by one"},
		{"copy a file without -r: 'boxkite files cp ID:PATH DST'", ""},
		{"name a file in it; list it with 'boxkite files ls DIR'; copy it whole with 'boxkite files cp -r ID:PATH DST'", ""},
		// No command: as it is.
		{"boxkite sandboxes reach no network: leave allowInternetAccess unset", "boxkite sandboxes reach no network: leave allowInternetAccess unset"},
		{"name the file without a backslash, or read and write it with commands.run", "name the file without a backslash, or read and write it with commands.run"},
		{"", ""},
	} {
		if got := E2BHint(tt.hint); got != tt.want {
			t.Errorf("E2BHint(%q)\n = %q\nwant %q", tt.hint, got, tt.want)
		}
	}
	e := api.Errorf(http.StatusConflict, api.CodeSandboxPaused, "sandbox sb1 is paused (freeze)").WithHint("resume it first: `boxkite session resume sb1`")
	if got, want := Message(e), "sandbox sb1 is paused (freeze) (resume it first: `Sandbox.connect('sb1')`)"; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	e.Hint = "list images with `boxkite images ls`"
	if got, want := Message(e), "sandbox sb1 is paused (freeze)"; got != want {
		t.Errorf("Message with a hint left out = %q, want %q", got, want)
	}
}
