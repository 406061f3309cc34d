package handoff

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCopyLines(t *testing.T) {
	big := `{"type":"user","data":"` + strings.Repeat("A", 3<<20) + `"}`
	tests := []struct {
		name     string
		in       string
		want     string
		warnings []string
	}{
		{"clean", "{\"a\":1}\n{\"b\":2}\n", "{\"a\":1}\n{\"b\":2}\n", nil},
		{"blank lines skipped", "\n{\"a\":1}\n  \n", "{\"a\":1}\n", nil},
		{"torn last line dropped", "{\"a\":1}\n{\"b\":", "{\"a\":1}\n", []string{"f: dropped line 2: incomplete (no newline at the end and not valid JSON: the tool was still writing it)"}},
		{"complete last line without newline kept", "{\"a\":1}\n{\"b\":2}", "{\"a\":1}\n{\"b\":2}\n", nil},
		{"only line without newline kept", "{\"b\":2}", "{\"b\":2}\n", nil},
		{"last line without newline that is not an object dropped", "{\"a\":1}\n[2]", "{\"a\":1}\n", []string{"f: dropped line 2: incomplete (no newline at the end and not valid JSON: the tool was still writing it)"}},
		{"corrupt middle line dropped", "{\"a\":1}\n{\"b\n{\"c\":3}\n", "{\"a\":1}\n{\"c\":3}\n", []string{"f: dropped line 2: not a JSON object"}},
		{"non-object dropped", "[1]\n\"s\"\n{\"c\":3}\n", "{\"c\":3}\n", []string{"f: dropped line 1: not a JSON object", "f: dropped line 2: not a JSON object"}},
		{"line over a megabyte kept", big + "\n", big + "\n", nil},
		{"CRLF kept as written", "{\"a\":1}\r\n", "{\"a\":1}\r\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			st, err := copyLines(strings.NewReader(tt.in), &out, "f", nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("output = %.200q, want %.200q", out.String(), tt.want)
			}
			if diff := cmp.Diff(tt.warnings, st.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if st.Dropped != len(tt.warnings) {
				t.Errorf("dropped = %d, want %d", st.Dropped, len(tt.warnings))
			}
		})
	}
}

// TestCopyLinesNoRecords: a file with nothing a tool could resume from is
// an error, not an empty file sent on.
func TestCopyLinesNoRecords(t *testing.T) {
	for _, in := range []string{"", "\n\n", "{\"a\":", "[1]\n\"s\"\n", "not json\n{\"b\""} {
		var out bytes.Buffer
		_, err := copyLines(strings.NewReader(in), &out, "f", nil)
		if !errors.Is(err, errNoRecords) {
			t.Errorf("copyLines(%q) = %v, want errNoRecords", in, err)
		}
	}
}

func FuzzCopyLines(f *testing.F) {
	f.Add([]byte(strings.Join(jsonSeeds, "\n") + "\n"))
	f.Add([]byte("{\"a\":1}\n{\"b\n[1]\n\n{\"c\":"))
	f.Add([]byte("\r\n{}\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		st, err := copyLines(bytes.NewReader(in), &out, "f", nil)
		if errors.Is(err, errNoRecords) && st.Kept == 0 {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(out.Bytes(), []byte("\n"))
		if len(lines[len(lines)-1]) != 0 {
			t.Fatalf("output %q does not end in a newline", out.Bytes())
		}
		lines = lines[:len(lines)-1]
		if len(lines) != st.Kept {
			t.Fatalf("kept %d lines, wrote %d", st.Kept, len(lines))
		}
		for _, l := range lines {
			if !json.Valid(l) || bytes.TrimSpace(l)[0] != '{' {
				t.Fatalf("wrote %q, not a JSON object", l)
			}
			if !bytes.Contains(in, l) {
				t.Fatalf("wrote %q, which is not a line of the input", l)
			}
		}
		if st.Dropped != len(st.Warnings) {
			t.Fatalf("dropped %d lines with %d warnings", st.Dropped, len(st.Warnings))
		}
	})
}
