package httpx

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/boxkite/boxkite/client/api"
)

// QueryInt reads an integer query parameter within [lo, hi]; absent means def.
func QueryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		msg := fmt.Sprintf("%s must be an integer between %d and %d", name, lo, hi)
		return 0, &api.Error{
			Status: http.StatusUnprocessableEntity, Code: api.CodeValidation, Message: msg,
			Details: []FieldError{{Loc: []string{"query", name}, Msg: msg, Type: "value_error"}},
		}
	}
	return n, nil
}
