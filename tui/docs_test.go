package tui

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
)

// TestKeysDocumented keeps docs/tui.md's key table in step with the keymap:
// every key of every binding appears in it.
func TestKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/tui.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"up": "↑", "down": "↓", "left": "←", "right": "→", " ": "space"}
	km := reflect.ValueOf(newKeyMap())
	for i := range km.NumField() {
		b := km.Field(i).Interface().(key.Binding)
		for _, k := range b.Keys() {
			if n, ok := names[k]; ok {
				k = n
			}
			if !strings.Contains(string(doc), "`"+k+"`") && !strings.Contains(string(doc), "`"+k+"/") && !strings.Contains(string(doc), "/`"+k+"`") {
				t.Errorf("docs/tui.md does not mention key %q (%s)", k, km.Type().Field(i).Name)
			}
		}
	}
}
