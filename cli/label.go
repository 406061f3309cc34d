package cli

import (
	"strconv"

	"github.com/boxkite/boxkite/client/api"
)

// checkLabel refuses a label (what names where it came from: --label, or
// LABEL for an argument) that the server would refuse, by the server's
// own rule (api.LabelProblem), before anything is sent or made: a usage
// error with the server's hint. The label is quoted, so a control
// character in it is shown escaped rather than sent to the terminal.
func checkLabel(what, label string) error {
	if msg := api.LabelProblem(label); msg != "" {
		return usageErrorf(api.LabelHint, "%s %s: %s", what, strconv.Quote(label), msg)
	}
	return nil
}
