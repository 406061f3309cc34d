package console

import (
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// apiPrefix is where the console serves the API (proxyAPI): before its
// mux, for any method, so that a path that is not clean reaches proxyAPI,
// which redirects it within /ui/api/ (the mux would redirect it out).
const apiPrefix = "/ui/api/"

// Route is one of the console's routes: its pattern, the credential it
// takes and the function that serves it, for the route list
// (docs/routes.md).
type Route struct {
	Pattern string
	Cred    string
	Func    any
	h       http.Handler
}

// The credentials the console's routes take.
const (
	credNone     = "none"
	credSession  = "console session"
	credPassword = "email and password"
	credAdminKey = "admin api key"
	credLink     = "one-time link"
)

// routeTable is the console's own paths: its page, its assets, the
// session plumbing, and the API under /ui/api/.
func (c *Console) routeTable() []Route {
	return []Route{
		{Pattern: apiPrefix, Cred: credSession, Func: c.proxyAPI, h: c.handler(c.proxyAPI)},
		{Pattern: "GET /ui", Cred: credNone, Func: redirectPage, h: http.HandlerFunc(redirectPage)},
		{Pattern: "GET /ui/", Cred: credNone, Func: c.servePage, h: http.HandlerFunc(c.servePage)},
		{Pattern: "GET /ui/assets/{name}", Cred: credNone, Func: c.serveAsset, h: http.HandlerFunc(c.serveAsset)},
		{Pattern: "GET /ui/session", Cred: credSession, Func: c.getSession, h: c.handler(c.getSession)},
		{Pattern: "POST /ui/session", Cred: credPassword, Func: c.signIn, h: c.handler(c.signIn)},
		{Pattern: "DELETE /ui/session", Cred: credSession, Func: c.signOut, h: c.handler(c.signOut)},
		{Pattern: "POST /ui/links", Cred: credAdminKey, Func: c.createLink, h: c.handler(c.createLink)},
		{Pattern: "GET /ui/link/{code}", Cred: credLink, Func: c.openLink, h: http.HandlerFunc(c.openLink)},
		{Pattern: "/ui/", Cred: credNone, Func: methodNotAllowed, h: c.handler(methodNotAllowed)},
	}
}

// routes registers the routes on the console's mux, but the API's,
// which ServeHTTP serves before it.
func (c *Console) routes() {
	for _, rt := range c.routeTable() {
		if rt.Pattern != apiPrefix {
			c.mux.Handle(rt.Pattern, rt.h)
		}
	}
}

// RouteHandlers lists the console's routes, for the route list.
func (c *Console) RouteHandlers() []Route { return c.routeTable() }

// Served returns the pattern of the route that serves r.
func (c *Console) Served(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, apiPrefix) {
		return apiPrefix
	}
	_, pattern := c.mux.Handler(r)
	return pattern
}

func redirectPage(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
}

func methodNotAllowed(http.ResponseWriter, *http.Request) error {
	return api.Errorf(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "method not allowed").
		WithHint("the console's page takes GET; its API is under /ui/api/v1/")
}
