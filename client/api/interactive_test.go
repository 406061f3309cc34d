package api

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInteractiveRequestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, r := range []InteractiveRequest{
		{Command: "cat > f"},
		{Command: "stty size", TTY: true, Cols: 97, Rows: 31, Term: "xterm", Cwd: "src"},
		{Subsystem: SubsystemSFTP},
	} {
		got, err := ParseInteractiveRequest(r.Query())
		if err != nil {
			t.Fatalf("parse %+v: %v", r, err)
		}
		want := r
		if want.Cols == 0 {
			want.Cols, want.Rows = 80, 24
		}
		if want.Term == "" {
			want.Term = "xterm-256color"
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	for _, q := range []string{"", "command=a&subsystem=sftp", "subsystem=x11", "command=a&tty=maybe", "command=a&cols=0&rows=5", "command=a&cols=5", "command=a%00b"} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseInteractiveRequest(v); err == nil {
			t.Errorf("%q was accepted", q)
		}
	}
}

func FuzzParseInteractiveRequest(f *testing.F) {
	f.Add("command=ls&tty=1&cols=80&rows=24")
	f.Add("subsystem=sftp")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		r, err := ParseInteractiveRequest(q)
		if err != nil {
			return
		}
		if (r.Command == "") == (r.Subsystem == "") || strings.ContainsRune(r.Command+r.Term+r.Cwd, 0) ||
			r.Cols < 1 || r.Cols > 1000 || r.Rows < 1 || r.Rows > 1000 {
			t.Errorf("accepted %q as %+v", raw, r)
		}
		again, err := ParseInteractiveRequest(r.Query())
		if err != nil {
			t.Fatalf("its own query %q: %v", r.Query().Encode(), err)
		}
		if !r.TTY {
			r.Cols, r.Rows, r.Term = again.Cols, again.Rows, again.Term // not sent without a TTY
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Errorf("query round trip (-first +second):\n%s", diff)
		}
	})
}
