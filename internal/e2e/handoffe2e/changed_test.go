package handoffe2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
	"github.com/boxkite/boxkite/handoff/handofftest"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestHandoffChangedInSandbox: before a second handoff into a sandbox
// (boxkite handoff -s), handoff.Changed names the files it would
// overwrite that changed there since the first, in a real sandbox of the
// local driver: a file of the tree (one with a space in its name) and the
// session's transcript the agent edited, not a file the agent added that
// the handoff does not send, nor what it sent unchanged. Before, a second
// handoff overwrote the agent's work without a word.
func TestHandoffChangedInSandbox(t *testing.T) {
	fx := handofftest.Install(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	plan, err := handoff.Prepare(ctx, handoff.Adapters()["claude-code"], handoff.Env{Home: fx.Home, Getenv: fx.Env()}, handoff.Options{Dir: fx.Src})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(plan.StageDir)
	transcript := ""
	for _, f := range plan.Files {
		if strings.HasSuffix(f.Target, handofftest.ClaudeSession+".jsonl") {
			transcript = strings.TrimPrefix(f.Target, handoff.SandboxHome+"/")
		}
	}
	if transcript == "" || !slices.Contains(plan.Overwrites(), transcript) || !slices.Contains(plan.Overwrites(), "my_app.v2/a b.txt") {
		t.Fatalf("the plan overwrites %q; want the tree's files and the transcript %q", plan.Overwrites(), transcript)
	}

	s := servertest.New(t)
	c := &client.Client{BaseURL: s.BaseURL, APIKey: s.APIKey}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "handoff-changed"})
	if err != nil {
		t.Fatal(err)
	}
	sbx := sandboxFiles{c, sb.ID}
	run := func(ctx context.Context, command string) (string, error) {
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: command, Timeout: 60})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
		}
		if err != nil {
			return "", err
		}
		return res.Stdout, nil
	}
	changed := func(when string, want []string) {
		t.Helper()
		got, err := handoff.Changed(ctx, plan, sbx, run)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: Changed = %q, %v; want %q", when, got, err, want)
		}
	}
	changed("before any handoff", nil)
	if _, err := handoff.Transfer(ctx, plan, sbx, sb.ID, nil); err != nil {
		t.Fatal(err)
	}
	changed("just after the handoff", nil)

	// The agent's edits, dated well after the handoff (the shell's -nt may
	// compare whole seconds), and a file of its own.
	edit := fmt.Sprintf(`cd /workspace && printf 'more\n' >>'my_app.v2/a b.txt' && printf '{}\n' >>'%s' && echo new >my_app.v2/new.txt &&
touch -d @%d 'my_app.v2/a b.txt' '%s' my_app.v2/new.txt`, transcript, time.Now().Add(time.Hour).Unix(), transcript)
	if _, err := run(ctx, edit); err != nil {
		t.Fatal(err)
	}
	want := []string{transcript, "my_app.v2/a b.txt"}
	slices.Sort(want)
	changed("after the agent's edits", want)
	// The list it left for the script is gone.
	if b, err := sbx.ReadFile(ctx, handoff.HandoffDir+"/overwrites"); err != nil || b != nil {
		t.Errorf("overwrites left in the sandbox: %q, %v", b, err)
	}
}
