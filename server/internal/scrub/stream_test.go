package scrub

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestStreamLineCap: the stream scrubbers (an exec's NDJSON, an
// interpreter run's, a process's server-sent events) cut their stream at
// a line or event longer than maxLine, whether it comes in pieces or
// whole in one write with its end: the lines before it pass, scrubbed,
// the output held back goes out, then one event naming the cap, and
// nothing after. A secret straddling the cap does not leave in part.
func TestStreamLineCap(t *testing.T) {
	const maxLine = 64 << 10
	const key = "AKIAIOSFODNN7EXAMPLE"
	// A line whose key starts 10 bytes before maxLine.
	longUnit := func(first, end string) string {
		return first + strings.Repeat("x", maxLine-len(first)-10) + key + strings.Repeat("y", 2*maxLine) + end
	}
	longLine := func(first string) string { return longUnit(first, "\"}\n") }
	streams := []struct {
		name   string
		kind   string // Content-Type; NDJSON when ""
		new    func(w http.ResponseWriter) http.ResponseWriter
		before string // an output line, its text ending in a word held back
		long   string
		after  string
		want   func(t *testing.T, lines []string)
	}{{
		name:   "exec",
		new:    func(w http.ResponseWriter) http.ResponseWriter { return NewNDJSON(w, time.Hour, maxLine) },
		before: `{"type":"stdout","data":"before key ` + key + ` held"}` + "\n",
		long:   longLine(`{"type":"stdout","data":"`),
		after:  `{"type":"stdout","data":"after"}` + "\n" + `{"type":"exit","exit_code":0}` + "\n",
		want: func(t *testing.T, lines []string) {
			var evs []api.ExecEvent
			for _, l := range lines {
				var ev api.ExecEvent
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				evs = append(evs, ev)
			}
			if len(evs) != 3 || evs[2].Type != api.EventError || evs[2].Error == nil {
				t.Fatalf("events %q, want two output events and an error", lines)
			}
			if got := evs[0].Data + evs[1].Data; got != "before key [REDACTED_AWS_KEY] held" {
				t.Errorf("output %q, want the first line's, scrubbed, whole", got)
			}
			e := evs[2].Error
			if diff := cmp.Diff([]string{api.CodeSandboxFailed, "the sandbox's exec stream had a line of more than 64 KiB; the rest of it was dropped"},
				[]string{e.Code, e.Message}); diff != "" || e.Hint == "" {
				t.Errorf("error event (-want +got):\n%s(hint %q)", diff, e.Hint)
			}
		},
	}, {
		name:   "interpreter",
		new:    func(w http.ResponseWriter) http.ResponseWriter { return NewInterpreterNDJSON(w, time.Hour, maxLine) },
		before: `{"stream":"stdout","text":"before key ` + key + ` held"}` + "\n",
		long:   longLine(`{"stream":"stdout","text":"`),
		after:  `{"stream":"stdout","text":"after"}` + "\n" + `{"end":{}}` + "\n",
		want: func(t *testing.T, lines []string) {
			var evs []api.InterpreterEvent
			for _, l := range lines {
				var ev api.InterpreterEvent
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				evs = append(evs, ev)
			}
			if len(evs) != 3 || evs[2].Failed == nil {
				t.Fatalf("lines %q, want two output lines and a failed one", lines)
			}
			if got := evs[0].Text + evs[1].Text; got != "before key [REDACTED_AWS_KEY] held" {
				t.Errorf("output %q, want the first line's, scrubbed, whole", got)
			}
			if f := evs[2].Failed; f.Code != api.CodeSandboxFailed || !strings.Contains(f.Message, "a line of more than 64 KiB") || f.Hint == "" {
				t.Errorf("failed line %+v, want sandbox_operation_failed naming the cap, with a hint", f)
			}
		},
	}, {
		name: "process",
		kind: "text/event-stream",
		new:  func(w http.ResponseWriter) http.ResponseWriter { return NewSSE(w, time.Hour, maxLine) },
		before: "event: output\ndata: " + `{"type":"output","stdout_chunk":"before key ` + key + ` held","next_offset":27}` + "\n\n" +
			": keep-alive\n\n",
		long: longUnit("event: output\ndata: "+`{"type":"output","stdout_chunk":"`, `","next_offset":9999999}`+"\n\n"),
		after: "event: output\ndata: " + `{"type":"output","stdout_chunk":"after","next_offset":10000004}` + "\n\n" +
			"event: exit\ndata: " + `{"type":"exit","status":"exited","exit_code":0}` + "\n\n",
		want: func(t *testing.T, lines []string) {
			var names []string
			var output string
			var e api.Error
			for _, l := range lines {
				switch {
				case strings.HasPrefix(l, "event: "):
					names = append(names, strings.TrimPrefix(l, "event: "))
				case strings.HasPrefix(l, "data: "):
					var ev api.ProcessEvent
					if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &ev); err != nil {
						t.Fatalf("line %q: %v", l, err)
					}
					output += ev.StdoutChunk
					if ev.Type == api.ProcessEventError && ev.Error != nil {
						e = *ev.Error
					}
				}
			}
			if diff := cmp.Diff([]string{"output", "output", "error"}, names); diff != "" {
				t.Fatalf("events (-want +got):\n%s\nstream %q", diff, lines)
			}
			if output != "before key [REDACTED_AWS_KEY] held" {
				t.Errorf("output %q, want the first event's, scrubbed, whole", output)
			}
			if diff := cmp.Diff([]string{api.CodeSandboxFailed, "the sandbox's process stream had an event of more than 64 KiB; the rest of it was dropped"},
				[]string{e.Code, e.Message}); diff != "" || e.Hint == "" {
				t.Errorf("error event (-want +got):\n%s(hint %q)", diff, e.Hint)
			}
		},
	}}
	writes := []struct {
		name  string
		split func(s string) []string
	}{
		{"whole", func(s string) []string { return []string{s} }},
		{"in pieces of 4 KiB", func(s string) []string {
			var out []string
			for len(s) > 4<<10 {
				out, s = append(out, s[:4<<10]), s[4<<10:]
			}
			return append(out, s)
		}},
	}
	for _, st := range streams {
		for _, wr := range writes {
			t.Run(st.name+"/"+wr.name, func(t *testing.T) {
				rec := httptest.NewRecorder()
				kind := api.ContentTypeNDJSON
				if st.kind != "" {
					kind = st.kind
				}
				rec.Header().Set("Content-Type", kind)
				w := st.new(rec)
				w.WriteHeader(http.StatusOK)
				for _, p := range wr.split(st.before + st.long + st.after) {
					if _, err := w.Write([]byte(p)); err != nil {
						t.Fatal(err)
					}
				}
				w.(interface{ FlushHeld() }).FlushHeld()
				body := rec.Body.String()
				for _, part := range []string{"AKIA", "EXAMPLE", "xxx", "yyy", "after"} {
					if strings.Contains(body, part) {
						t.Errorf("stream %.300q holds %q", body, part)
					}
				}
				var lines []string
				sc := bufio.NewScanner(strings.NewReader(body))
				for sc.Scan() {
					lines = append(lines, sc.Text())
				}
				st.want(t, lines)
			})
		}
	}
}
