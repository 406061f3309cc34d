package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// hintCommand matches a boxkite command line quoted in Go source, as
// hints and help texts write them: `boxkite org ls` or 'boxkite org ls'.
var hintCommand = regexp.MustCompile("[`']boxkite((?: [a-z][a-z0-9-]*)+)")

// prose are quotes that begin a sentence about boxkite, not a command.
var prose = map[string]bool{"`boxkite runs commands in isolated sandboxes": true}

// TestHintsNameCommands: every boxkite command quoted in the module's Go
// sources (the server's and sidecar's hints, the CLI's own errors and
// help) names a command of this CLI, so a user who types a hint finds
// it. A quote of a command with subcommands must name one of them.
func TestHintsNameCommands(t *testing.T) {
	t.Parallel()
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, "test"))
	root.InitDefaultHelpCmd() // `boxkite help TOPIC`
	n := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range hintCommand.FindAllStringSubmatch(string(src), -1) {
			n++
			if prose[m[0]] {
				continue
			}
			if why := unknownCommand(root, strings.Fields(m[1])); why != "" {
				t.Errorf("%s quotes %q: %s", path, strings.TrimLeft(m[0], "`'"), why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Errorf("checked %d quoted commands, want the few hundred the sources have", n)
	}
}

// unknownCommand says why words do not start a command line of root, or
// returns "".
func unknownCommand(root *cobra.Command, words []string) string {
	c, rest, err := root.Find(words)
	if err != nil {
		return err.Error()
	}
	if c == root {
		return "no such command"
	}
	if len(rest) > 0 && c.HasSubCommands() {
		if err := c.ValidateArgs(rest); err != nil {
			return "no subcommand " + rest[0] + " of " + c.CommandPath()
		}
	}
	return ""
}
