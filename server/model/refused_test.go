package model_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

type sqlStateError string

func (e sqlStateError) Error() string    { return "ERROR: refused (SQLSTATE " + string(e) + ")" }
func (e sqlStateError) SQLState() string { return string(e) }

// TestRefusedValue: a data exception anywhere in an error's chain is the
// client's 422, saying which kind of value without the database's words;
// any other error, or another SQLSTATE, is not.
func TestRefusedValue(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string // in the message; "": not a refused value
	}{
		{fmt.Errorf("insert volume: %w", sqlStateError("22021")), "NUL character"},
		{sqlStateError("22P05"), "NUL character"},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", sqlStateError("22003"))), "a number out of range"},
		{sqlStateError("22008"), "a time out of range"},
		{sqlStateError("22001"), "text longer"},
		{sqlStateError("54000"), "text longer"},
		{sqlStateError("23505"), ""},
		{sqlStateError("40001"), ""},
		{errors.New("22021"), ""},
		{nil, ""},
	} {
		ae := model.RefusedValue(tt.err)
		switch {
		case tt.want == "" && ae != nil:
			t.Errorf("%v: %+v, want nil", tt.err, ae)
		case tt.want == "":
		case ae == nil:
			t.Errorf("%v: nil, want a refusal saying %q", tt.err, tt.want)
		case ae.Status != http.StatusUnprocessableEntity || ae.Code != api.CodeValidation || !strings.Contains(ae.Message, tt.want) ||
			ae.Hint == "" || strings.Contains(ae.Message, "SQLSTATE"):
			t.Errorf("%v: %+v, want 422 validation_error saying %q with a hint, no SQLSTATE", tt.err, ae, tt.want)
		}
	}
}
