package apihttp

import (
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// probeMethods are the methods MethodNotAllowed tries, in the order Allow
// lists them.
var probeMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// MethodNotAllowed is for a mux's catch-all handler (the one registered
// as catchAll, which matches every method): when mux serves r's path
// under other methods it sets Allow and returns a 405 method_not_allowed;
// when it serves the path under none it returns nil, and the answer is a
// 404. ServeMux says 405 by itself only without such a catch-all.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, mux *http.ServeMux, catchAll string) *api.Error {
	var allow []string
	for _, m := range probeMethods {
		if m == r.Method {
			continue
		}
		probe := r.WithContext(r.Context()) // a shallow copy: only the method differs
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != catchAll {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return nil
	}
	list := strings.Join(allow, ", ")
	w.Header().Set("Allow", list)
	return api.Errorf(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "%s is not served for %s", r.Method, r.URL.Path).
		WithHint("this path takes " + list)
}
