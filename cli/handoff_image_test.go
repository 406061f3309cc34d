package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestBuildLine: the image build's progress is one line, redrawn with
// the time taken and the build log's last complete line, cut to fit, and
// cleared at the end.
func TestBuildLine(t *testing.T) {
	var out bytes.Buffer
	b := &buildLine{w: &out, start: time.Now().Add(-42 * time.Second), id: "img_1"}
	b.Write([]byte("egress granted: npm.test:1\n$ npm install --global @openai/codex@0.171.0\npartial"))
	got := out.String()
	last := got[strings.LastIndex(got, "\r"):]
	if !strings.Contains(last, "image img_1: 42s · $ npm install --global @openai/codex@0.171.0") || strings.Contains(last, "partial") {
		t.Errorf("progress line %q", last)
	}
	b.Write([]byte(" line\n" + strings.Repeat("x", 300) + "\n"))
	got = out.String()
	if last = got[strings.LastIndex(got, "\r"):]; len([]rune(strings.TrimSuffix(strings.TrimPrefix(last, "\r"), "\x1b[K"))) > 100 {
		t.Errorf("a long log line is not cut: %q", last)
	}
	b.end()
	b.Write([]byte("after the end\n"))
	if got = out.String(); !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("the line is not cleared at the end, or is drawn after: %q", got[max(0, len(got)-40):])
	}
}
