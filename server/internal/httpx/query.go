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
		return 0, InvalidQuery(name, fmt.Sprintf("%s must be an integer between %d and %d", name, lo, hi),
			fmt.Sprintf("omit %s for the default of %d", name, def))
	}
	return n, nil
}

// InvalidQuery is Invalid for a query parameter: the field's loc is
// ["query", name], not the body's.
func InvalidQuery(name, msg, hint string) *api.Error {
	e := api.Invalid(name, msg, hint)
	e.Details = []FieldError{{Loc: []string{"query", name}, Msg: msg, Type: "value_error"}}
	return e
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
