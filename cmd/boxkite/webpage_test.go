package main

import (
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdWebpage starts, for the rest of the script, a web server that is not
// boxkite on a free loopback port, and sets $VAR to its URL: every path
// answers a small HTML page, with the status the path's last segment
// names when it is one (/v1/x/404 answers 404), else 200. It is a wrong
// base URL, a proxy's error page, a login page that answers 200 to all.
func cmdWebpage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: webpage VAR")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		if n, err := strconv.Atoi(path.Base(r.URL.Path)); err == nil && n >= 200 && n <= 599 {
			status = n
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte("<html><body><h1>" + strconv.Itoa(status) + " " + http.StatusText(status) + "</h1></body></html>\n"))
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}
