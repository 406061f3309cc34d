package takeover

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRecordingKeepsCharactersWhole: a character whose bytes the terminal's
// output splits across frames (a read of the PTY ends anywhere) is
// recorded whole, not as two U+FFFD in the events' JSON strings.
func TestRecordingKeepsCharactersWhole(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		frames []string
		want   []string // the "o" events' data
	}{
		{"whole", []string{"café €\r\n"}, []string{"café €\r\n"}},
		{"two bytes split", []string{"caf\xc3", "\xa9!"}, []string{"caf", "é!"}},
		{"three bytes split twice", []string{"\xe2", "\x82", "\xac ok"}, []string{"€ ok"}},
		{"four bytes split", []string{"a\xf0\x9f", "\x98\x80b"}, []string{"a", "😀b"}},
		{"cut at the end", []string{"end \xe2\x82"}, []string{"end ", "\ufffd\ufffd"}},
		{"invalid bytes pass", []string{"x\xff", "\x80y"}, []string{"x\ufffd", "\ufffdy"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := time.Unix(1_800_000_000, 0)
			r := newRecorder(func() time.Time { return clock })
			for _, f := range c.frames {
				r.output([]byte(f))
			}
			data, _ := r.result()
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Scan() // the header
			var got []string
			for sc.Scan() {
				var ev []any
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
					t.Fatalf("event %s: %v", sc.Bytes(), err)
				}
				got = append(got, ev[2].(string))
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
