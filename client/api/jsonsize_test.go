package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// JSONStringSize counts what json.Marshal writes, byte for byte.
func TestJSONStringSize(t *testing.T) {
	for _, s := range []string{"", "plain", "a\nb\tc\r\"\\", "\b\f\x00\x1f", "<a href=x>&amp;", "héllo 世界 🎉", "\u2028\u2029", "bad \xff\xfe utf8", "\x7f"} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := JSONStringSize(s); got != len(b) {
			t.Errorf("JSONStringSize(%q) = %d, json.Marshal wrote %d bytes: %s", s, got, len(b), b)
		}
	}
}

// 9 MiB of newlines is under MaxFileContent but 18 MiB as JSON.
func TestFileBodyFits(t *testing.T) {
	if err := FileBodyFits(FileCreateRequest{Path: "a", Content: strings.Repeat("x", 9<<20)}); err != nil {
		t.Errorf("9 MiB of letters: %v", err)
	}
	err := FileBodyFits(FileCreateRequest{Path: "a", Content: strings.Repeat("\n", 9<<20)})
	if err == nil || !strings.Contains(err.Error(), "as JSON") || !strings.Contains(err.Error(), "16 MiB") {
		t.Errorf("9 MiB of newlines: %v", err)
	}
	if err := FileBodyFits(FileCreateRequest{Content: strings.Repeat("x", 11<<20)}); err == nil || !strings.Contains(err.Error(), "10 MiB") {
		t.Errorf("11 MiB: %v", err)
	}
}
