package api

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LabelProblem says what is wrong with a label (of a sandbox, volume,
// snapshot, image or MCP connection), "" when nothing is: a label holds no
// control characters (an ESC would repaint a terminal that lists it), and
// one that is not empty is not only whitespace, as an API key's name. Its
// length is the caller's to check.
func LabelProblem(label string) string {
	if i := strings.IndexFunc(label, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(label[i:])
		return fmt.Sprintf("label contains the control character %U; it must be printable text", r)
	}
	if label != "" && strings.TrimSpace(label) == "" {
		return "label must not be only whitespace"
	}
	return ""
}

// LabelHint is the hint of a refused label.
const LabelHint = `name it with printable text, e.g. "web-1", or leave it out`

// CheckLabel refuses a body's label that LabelProblem finds fault with:
// 422 validation_error naming the field.
func CheckLabel(label string) error {
	if msg := LabelProblem(label); msg != "" {
		return Invalid("label", msg, LabelHint)
	}
	return nil
}
