package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestPagerCommand(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nothing set: less", nil, "less -FRX"},
		{"PAGER", map[string]string{"PAGER": "more"}, "more"},
		{"BOXKITE_PAGER wins", map[string]string{"PAGER": "more", "BOXKITE_PAGER": "most -s"}, "most -s"},
		{"BOXKITE_PAGER=cat: off", map[string]string{"PAGER": "more", "BOXKITE_PAGER": "cat"}, ""},
		{"BOXKITE_PAGER empty: off", map[string]string{"PAGER": "more", "BOXKITE_PAGER": ""}, ""},
		{"PAGER empty: off", map[string]string{"PAGER": " "}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			if got := pagerCommand(lookup); got != tt.want {
				t.Errorf("pagerCommand = %q, want %q", got, tt.want)
			}
		})
	}
}

// pagedRun runs write as a paged command whose stdout is a pipe the
// test pretends is a terminal, and returns what reached the "terminal",
// stderr and the error.
func pagedRun(t *testing.T, pager string, write func(io.Writer) error) (string, string, error) {
	t.Helper()
	t.Setenv(envPager, pager)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	app := &App{IO: IO{Out: w, ErrOut: &errOut, OutTTY: true}}
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	runErr := runPaged(app, func() error { return write(app.IO.Out) })
	if app.IO.Out != w {
		t.Errorf("stdout not restored after the command")
	}
	w.Close()
	return <-got, errOut.String(), runErr
}

func TestRunPaged(t *testing.T) {
	t.Run("output goes through the pager", func(t *testing.T) {
		out, _, err := pagedRun(t, "sed 's/^/paged: /'", func(w io.Writer) error {
			_, err := fmt.Fprint(w, "one\ntwo\n")
			return err
		})
		if err != nil || out != "paged: one\npaged: two\n" {
			t.Errorf("got %q, %v", out, err)
		}
	})
	t.Run("no output, no pager", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "started")
		out, _, err := pagedRun(t, "touch "+marker+"; cat", func(io.Writer) error { return nil })
		if _, statErr := os.Stat(marker); statErr == nil || err != nil || out != "" {
			t.Errorf("a command that printed nothing started the pager (out %q, err %v)", out, err)
		}
	})
	t.Run("quitting the pager early is no failure", func(t *testing.T) {
		out, _, err := pagedRun(t, "head -n 1", func(w io.Writer) error {
			line := strings.Repeat("x", 99) + "\n"
			for range 20000 { // 2 MB: far more than a pipe holds
				if _, err := io.WriteString(w, line); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || strings.Count(out, "\n") != 1 {
			t.Errorf("got %d lines, err %v", strings.Count(out, "\n"), err)
		}
	})
	t.Run("a missing pager: printed directly, with a warning", func(t *testing.T) {
		out, errOut, err := pagedRun(t, "no-such-pager-here -x", func(w io.Writer) error {
			_, err := fmt.Fprint(w, "direct\n")
			return err
		})
		if err != nil || out != "direct\n" || !strings.Contains(errOut, `pager "no-such-pager-here -x" not found`) {
			t.Errorf("got %q, stderr %q, %v", out, errOut, err)
		}
	})
	// A pager that fails (a typo in its options, a broken script) shows
	// nothing: the output is gone, and saying nothing would leave the
	// reader wondering where it went.
	t.Run("a failing pager is reported", func(t *testing.T) {
		_, errOut, err := pagedRun(t, "false", func(w io.Writer) error {
			_, err := fmt.Fprint(w, "lost\n")
			return err
		})
		if err != nil || !strings.Contains(errOut, `warning: the pager "false" failed (exit status 1)`) || !strings.Contains(errOut, "BOXKITE_PAGER=cat") {
			t.Errorf("stderr %q, err %v", errOut, err)
		}
	})
	t.Run("the command's error comes after the pager", func(t *testing.T) {
		_, _, err := pagedRun(t, "cat", func(w io.Writer) error {
			fmt.Fprint(w, "partial\n")
			return fmt.Errorf("boom")
		})
		if err == nil || err.Error() != "boom" {
			t.Errorf("err = %v, want boom", err)
		}
	})
}

// TestPageableCommands: the commands that print lists or long text go
// through the pager; those that stream, ask or take the terminal never do.
func TestPageableCommands(t *testing.T) {
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, "test"))
	paged := map[string]bool{}
	walk(root, func(c *cobra.Command) {
		if c.Annotations[annotationPager] != "" {
			paged[c.CommandPath()] = true
		}
	})
	for _, want := range []string{"boxkite session ls", "boxkite keys ls", "boxkite images ls", "boxkite log", "boxkite files view", "boxkite context ls", "boxkite ps"} {
		if !paged[want] {
			t.Errorf("%s is not paged", want)
		}
	}
	for _, never := range []string{"boxkite exec", "boxkite attach", "boxkite watch", "boxkite tui", "boxkite api", "boxkite session rm", "boxkite images logs"} {
		if paged[never] {
			t.Errorf("%s must not be paged", never)
		}
	}
}
