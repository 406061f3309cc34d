package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client/api"
)

// TestOutputFormats runs session ls against a fake API with each of the
// machine-output flags (issue 28, acceptance 1).
func TestOutputFormats(t *testing.T) {
	isolate(t)
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{
			{ID: "aaa111", Status: api.StatusActive, Label: "one", Size: "small", CreatedAt: created},
			{ID: "bbb222", Status: api.StatusActive, Size: "medium", CreatedAt: created},
		}),
	})
	t.Setenv(envURL, srv.URL)
	sandboxFields := "id, status, label, size, storage_gb, lifetime_minutes, created_at, expires_at, destroyed_at, destroy_reason, paused_with, paused_at, auto_pause, sidecar_protocol, frozen_reason"
	tests := []struct {
		name       string
		args       []string
		wantOut    string
		wantErr    string // a substring of stderr
		wantCode   int
		wantPrefix bool // wantOut is only the start of stdout
	}{
		{name: "jq over picked fields", args: []string{"--json", "id,label", "--jq", ".[].label"}, wantOut: "one\n\n"},
		{
			name: "picked fields, omitted ones zero", args: []string{"--json", "id,label"},
			wantOut: "[\n  {\n    \"id\": \"aaa111\",\n    \"label\": \"one\"\n  },\n  {\n    \"id\": \"bbb222\",\n    \"label\": \"\"\n  }\n]\n",
		},
		{name: "one field after =", args: []string{"--json=size", "--jq", ".[].size"}, wantOut: "small\nmedium\n"},
		{name: "one field as the next word", args: []string{"--json", "size", "-q", "map(.size) | join(\" \")"}, wantOut: "small medium\n"},
		{name: "bare --json prints everything in the API's order", args: []string{"--json"}, wantOut: "[\n  {\n    \"id\": \"aaa111\",\n    \"status\": \"active\",\n    \"label\": \"one\",", wantPrefix: true},
		{name: "-o json", args: []string{"-o", "json"}, wantOut: "[\n  {\n    \"id\": \"aaa111\",", wantPrefix: true},
		{name: "jq alone implies JSON; non-strings print as JSON", args: []string{"--jq", "[.[] | .lifetime_minutes]"}, wantOut: "[0,0]\n"},
		{name: "template", args: []string{"--template", `{{range .}}{{.id}}{{"\n"}}{{end}}`}, wantOut: "aaa111\nbbb222\n"},
		{
			name: "template table rows", args: []string{"-t", `{{range .}}{{tablerow .id .size (timefmt "2006-01-02" .created_at)}}{{end}}`},
			wantOut: "aaa111  small   2026-03-01\nbbb222  medium  2026-03-01\n",
		},
		{name: "template pluck and join", args: []string{"-t", `{{join ", " (pluck "id" .)}}`}, wantOut: "aaa111, bbb222"},
		// As in gh, a null prints as nothing, not as "<nil>".
		{
			name: "template helpers print null as empty", args: []string{"-t", `{{join "," (pluck "destroyed_at" .)}}|{{range .}}{{truncate 5 .destroyed_at}}{{color "red" .destroyed_at}}{{tablerow .id .destroyed_at "x"}}{{end}}`},
			wantOut: ",|aaa111    x\nbbb222    x\n",
		},
		{name: "template colour is off when piped", args: []string{"-t", `{{range .}}{{color "green" .status}} {{end}}`}, wantOut: "active active "},
		{
			name: "unknown field", args: []string{"--json", "id,bogus"}, wantCode: exitUsage,
			wantErr: "error: unknown JSON field \"bogus\"\nhint: available fields: " + sandboxFields + "\n",
		},
		{name: "unknown single field", args: []string{"--json", "bogus"}, wantCode: exitUsage, wantErr: `unknown JSON field "bogus"`},
		{name: "bad jq", args: []string{"--jq", ".[] |"}, wantCode: exitUsage, wantErr: "error: invalid --jq expression"},
		{name: "bad template", args: []string{"--template", "{{.id"}, wantCode: exitUsage, wantErr: "error: invalid --template"},
		{name: "jq and template", args: []string{"--jq", ".", "--template", "x"}, wantCode: exitUsage, wantErr: "do not go together"},
		{name: "jq runtime error", args: []string{"--jq", ".[] | .id + 1"}, wantCode: exitError, wantErr: "error: jq: "},
		{name: "jq runtime error has a hint", args: []string{"--jq", `error("boom")`}, wantCode: exitError, wantErr: "error: jq: error: boom\nhint: "},
		{name: "template runtime error has a hint", args: []string{"-t", "{{.nope}}"}, wantCode: exitError, wantErr: "\nhint: "},
		// As gh reads --json "number, title": spaces around the names and
		// a trailing comma are not a second argument.
		{name: "fields with spaces", args: []string{"--json", "id, label", "--jq", ".[0] | keys | join(\" \")"}, wantOut: "id label\n"},
		{name: "fields with a trailing comma", args: []string{"--json", "id,label,", "--jq", ".[0] | keys | join(\" \")"}, wantOut: "id label\n"},
		{name: "fields repeated", args: []string{"--json", "id,id", "--jq", ".[0] | keys | join(\" \")"}, wantOut: "id\n"},
		{name: "unknown field with spaces", args: []string{"--json", "id, bogus"}, wantCode: exitUsage, wantErr: `unknown JSON field "bogus"`},
		{name: "jq sees no environment", args: []string{"--jq", "$ENV | length"}, wantOut: "0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"session", "ls"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			got := r.stdout
			if tt.wantPrefix && len(got) > len(tt.wantOut) {
				got = got[:len(tt.wantOut)]
			}
			if diff := cmp.Diff(tt.wantOut, got); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.wantErr)
			}
		})
	}
}

// TestJoinJSONFields checks when the word after --json is read as its
// fields and when it stays a positional argument.
func TestJoinJSONFields(t *testing.T) {
	t.Parallel()
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, "test"))
	tests := []struct{ in, want string }{
		{"session ls --json id,label", "session ls --json=id,label"},
		{"session ls --json id", "session ls --json=id"},
		{"session ls --json bogus", "session ls --json=bogus"},               // ls takes no argument: a field, reported unknown
		{"session get --json build", "session get --json build"},             // get takes an id: stays one
		{"session get --json label build", "session get --json=label build"}, // a known field
		{"session get --json id,label x", "session get --json=id,label x"},
		{"session ls --json", "session ls --json"},
		{"session ls --json -a", "session ls --json -a"},
		{"exec --json -- id,x", "exec --json -- id,x"},
		{"exec --json ls", "exec --json ls"},
		{"down --json id", "down --json id"}, // no --json there: untouched
		{"up --json url", "up --json=url"},
		{"session ls --json id,label,", "session ls --json=id,label,"},
		{"session get --json id,_label x", "session get --json=id,_label x"},
	}
	for _, tt := range tests {
		got := strings.Join(joinJSONFields(root, strings.Fields(tt.in)), " ")
		if got != tt.want {
			t.Errorf("joinJSONFields(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestUnknownFieldAfterArgs: 'get ID --json bogus' leaves bogus an
// argument (it could be an id), and the count error that followed
// ("takes 1 argument (got 2)") hid the mistake: it is the unknown-field
// error listing the fields, as on a command without arguments. A word
// that is not one too many is left to the command.
func TestUnknownFieldAfterArgs(t *testing.T) {
	isolate(t)
	t.Setenv(envURL, "http://127.0.0.1:1") // nothing is asked: refused first
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"session", "get", "box", "--json", "bogus"}, "error: unknown JSON field \"bogus\"\nhint: available fields: id, status, label, "},
		{[]string{"webhooks", "get", "9d8c", "--json", "secret"}, "error: unknown JSON field \"secret\"\nhint: available fields: id, url, "},
		{[]string{"session", "get", "a", "b", "--json", "bogus"}, "error: boxkite session get takes 1 argument (got 3)\n"},
	} {
		r := runCLI(t, "", tt.args...)
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, r.code, r.stderr, exitUsage, tt.want)
		}
	}
}

func TestJSONFields(t *testing.T) {
	t.Parallel()
	type inner struct {
		A string `json:"a"`
		B int    `json:"b,omitempty"`
	}
	type outer struct {
		inner
		C     []string `json:"c"`
		Skip  string   `json:"-"`
		Plain bool
		//lint:ignore U1000 unexported fields are never JSON fields: that is the point
		private int
	}
	names, zero := jsonFields([]outer{})
	if diff := cmp.Diff([]string{"a", "b", "c", "Plain"}, names); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if want := map[string]any{"a": "", "b": jsonNumber("0"), "c": nil, "Plain": false}; !cmp.Equal(want, zero) {
		t.Errorf("zero values = %#v, want %#v", zero, want)
	}
	if names, _ := jsonFields(map[string]bool{}); names != nil {
		t.Errorf("a map has fields %v, want none", names)
	}
	if names, _ := jsonFields(nil); names != nil {
		t.Errorf("nil has fields %v, want none", names)
	}
}

// TestOutputConventions walks the whole command tree: every command that
// prints JSON takes --jq and --template too and lists its fields in its
// help. New commands get this by using outputFlags.register.
func TestOutputConventions(t *testing.T) {
	t.Parallel()
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, "test"))
	n := 0
	walk(root, func(c *cobra.Command) {
		if c.Flags().Lookup("json") == nil {
			return
		}
		n++
		for _, name := range []string{"jq", "template", "output"} {
			if c.Flags().Lookup(name) == nil {
				t.Errorf("%s has --json but no --%s", c.CommandPath(), name)
			}
		}
		if _, ok := c.Annotations[annotationJSONFields]; !ok {
			t.Errorf("%s has --json not registered through outputFlags", c.CommandPath())
		}
		if f := c.Annotations[annotationJSONFields]; f != "" && !strings.Contains(c.Long, "JSON fields (--json FIELDS): ") {
			t.Errorf("%s: help does not list its JSON fields", c.CommandPath())
		}
	})
	if n < 20 {
		t.Errorf("only %d commands have --json; the walk is broken", n)
	}
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

func TestTableFitsTerminal(t *testing.T) {
	t.Parallel()
	rows := "ID\tLABEL\tCOMMAND\n" +
		"3f2a9c01\ta-rather-long-label\tpython3 -m http.server 8000 --bind 127.0.0.1\n" +
		"77aa\tx\t" + "\x1b[32mok\x1b[0m\n"
	tests := []struct {
		name  string
		width int
		want  string
	}{
		{"not a terminal: nothing is cut", 0, "" +
			"ID        LABEL                COMMAND\n" +
			"3f2a9c01  a-rather-long-label  python3 -m http.server 8000 --bind 127.0.0.1\n" +
			"77aa      x                    \x1b[32mok\x1b[0m\n"},
		{"wide terminal", 200, "" +
			"ID        LABEL                COMMAND\n" +
			"3f2a9c01  a-rather-long-label  python3 -m http.server 8000 --bind 127.0.0.1\n" +
			"77aa      x                    \x1b[32mok\x1b[0m\n"},
		{"narrow: the widest column is cut first", 50, "" +
			"ID        LABEL                COMMAND\n" +
			"3f2a9c01  a-rather-long-label  python3 -m http.se…\n" +
			"77aa      x                    \x1b[32mok\x1b[0m\n"},
		{"narrower: both cut, the id kept", 30, "" +
			"ID        LABEL      COMMAND\n" +
			"3f2a9c01  a-rather…  python3 …\n" +
			"77aa      x          \x1b[32mok\x1b[0m\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tw := newTable(&b)
			tw.maxWidth = tt.width
			fmt.Fprint(tw, rows)
			if err := tw.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
			if tt.width > 0 {
				for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
					if w := len([]rune(strings.NewReplacer("\x1b[32m", "", "\x1b[0m", "").Replace(line))); w > tt.width {
						t.Errorf("line %q is %d wide, more than %d", line, w, tt.width)
					}
				}
			}
		})
	}
}

// terminalOut is a Writer that says it is a terminal of a given width.
type terminalOut struct {
	bytes.Buffer
	width int
}

func (t *terminalOut) TerminalWidth() int { return t.width }

func TestTableWidthFollowsWriter(t *testing.T) {
	t.Parallel()
	out := &terminalOut{width: 20}
	tw := newTable(out)
	fmt.Fprintln(tw, "ID\tNAME")
	fmt.Fprintln(tw, "1\tabcdefghijklmnopqrstuvwxyz")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "ID  NAME\n1   abcdefghijklmno…\n"; out.String() != want {
		t.Errorf("table = %q, want %q", out.String(), want)
	}
}

type jsonNumber = json.Number
