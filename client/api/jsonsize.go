package api

import (
	"fmt"
	"unicode/utf8"
)

// MaxFileBody is the limit of the JSON body of exec and the file routes
// (16 MiB). File content counts there as JSON writes it, so text of
// MaxFileContent bytes or less can still be too large: see FileBodyFits.
const MaxFileBody = 16 << 20

// JSONStringSize returns how many bytes s takes as a JSON string as
// encoding/json writes it, quotes included: a quote, backslash, newline,
// tab, carriage return, backspace or form feed takes 2 bytes, another
// control character, <, >, &, U+2028, U+2029 or an invalid byte 6.
func JSONStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// FileBodyFits says why req cannot be sent, or nil: its content is over
// MaxFileContent, or its body as JSON is over MaxFileBody (9 MiB of
// newlines is 18 MiB as JSON).
func FileBodyFits(req FileCreateRequest) error {
	if len(req.Content) > MaxFileContent {
		return fmt.Errorf("content is %d bytes; the limit is %d MiB", len(req.Content), MaxFileContent>>20)
	}
	size := JSONStringSize(req.Content) + JSONStringSize(req.Path) + JSONStringSize(req.Description) + len(`{"path":,"content":,"description":}`)
	if size > MaxFileBody {
		return fmt.Errorf("content is %d bytes, but %d as JSON (newlines, quotes, backslashes and tabs take 2 bytes there, other control characters and <, >, & 6), over the %d MiB limit of a request body",
			len(req.Content), size, MaxFileBody>>20)
	}
	return nil
}
