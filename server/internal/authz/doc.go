// Package authz says who a request acts for and what it may reach: the
// Caller the guard authenticated (an account with its API key or takeover
// Grant), carried in the request's httpx.Info. Subsystems read the caller
// here rather than from the server.
package authz
