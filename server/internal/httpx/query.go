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

// LogPage reads the page of an audit log a request asks for: ?limit=
// (api.DefaultLogLimit, at most api.MaxLogLimit) and ?offset=.
func LogPage(r *http.Request) (limit, offset int, err error) {
	if limit, err = QueryInt(r, "limit", api.DefaultLogLimit, 1, api.MaxLogLimit); err != nil {
		return 0, 0, err
	}
	if offset, err = QueryInt(r, "offset", 0, 0, 1<<31-1); err != nil {
		return 0, 0, err
	}
	return limit, offset, nil
}
