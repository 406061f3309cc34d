// Package client is the Go client for the boxkite control-plane API. It is the
// supported way to call the API from Go; non-2xx responses come back as *api.Error.
package client
