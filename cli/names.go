package cli

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// checkNameArg refuses, before any request, a name the server would
// refuse with a 422 (an organization's or an API key's): 1 to limit
// characters once trimmed, none of them a control character. what names
// the argument or flag.
func checkNameArg(what, name string, limit int) error {
	name = strings.TrimSpace(name)
	if n := utf8.RuneCountInString(name); n < 1 || n > limit || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return usageErrorf(fmt.Sprintf("give a name such as acme or ci-runner, at most %d characters", limit),
			"%s must be 1 to %d printable characters", what, limit)
	}
	return nil
}
