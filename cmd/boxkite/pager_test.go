package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// TestPagerOnTerminal runs the real binary on a 40-column pseudo-terminal
// (issue 28): a list goes through $BOXKITE_PAGER, its table fits the
// terminal's width behind the pager too, the header is bold only without
// NO_COLOR, and BOXKITE_PAGER=cat prints directly. The scripts cannot
// show this: their stdout is never a terminal.
func TestPagerOnTerminal(t *testing.T) {
	bin := buildCLI(t)
	home := t.TempDir()
	contexts := filepath.Join(home, "contexts")
	if err := os.MkdirAll(contexts, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"staging", "production-eu-west"} {
		toml := "base_url = 'https://" + name + ".boxkite.a-rather-long-domain.example'\n"
		if err := os.WriteFile(filepath.Join(contexts, name+".toml"), []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const cols = 40
	ansi := regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]`)
	run := func(t *testing.T, extra ...string) string {
		t.Helper()
		cmd := exec.Command(bin, "context", "ls")
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "BOXKITE_HOME=" + home, "TERM=xterm"}, extra...)
		ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: cols})
		if err != nil {
			t.Fatalf("start on a pty: %v", err)
		}
		defer ptmx.Close()
		out := readAll(ptmx)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("boxkite context ls: %v\n%s", err, out)
		}
		return out
	}
	fits := func(t *testing.T, text string) {
		t.Helper()
		for _, line := range strings.Split(strings.TrimSpace(ansi.ReplaceAllString(text, "")), "\n") {
			line = strings.TrimRight(line, "\r")
			if w := len([]rune(line)); w > cols {
				t.Errorf("line %q is %d wide on a %d-column terminal", line, w, cols)
			}
		}
	}

	t.Run("paged", func(t *testing.T) {
		paged := filepath.Join(t.TempDir(), "paged")
		screen := run(t, "BOXKITE_PAGER=tee "+paged)
		b, err := os.ReadFile(paged)
		if err != nil {
			t.Fatalf("the pager never ran: %v\nscreen:\n%s", err, screen)
		}
		got := string(b)
		for _, want := range []string{"\x1b[1mNAME", "staging", "production-eu-west", "…"} {
			if !strings.Contains(got, want) {
				t.Errorf("the pager got no %q:\n%s", want, got)
			}
		}
		fits(t, got)
		if !strings.Contains(screen, "staging") {
			t.Errorf("the pager's output is not on the terminal:\n%s", screen)
		}
	})
	t.Run("NO_COLOR", func(t *testing.T) {
		paged := filepath.Join(t.TempDir(), "paged")
		run(t, "BOXKITE_PAGER=tee "+paged, "NO_COLOR=1")
		b, err := os.ReadFile(paged)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\x1b") {
			t.Errorf("colour with NO_COLOR:\n%q", b)
		}
	})
	t.Run("BOXKITE_PAGER=cat prints directly", func(t *testing.T) {
		screen := run(t, "BOXKITE_PAGER=cat", "PAGER=false")
		if !strings.Contains(screen, "production-eu") {
			t.Errorf("nothing printed:\n%s", screen)
		}
		fits(t, screen)
	})
}
