// Package httpx is the HTTP plumbing the control plane's subsystems share:
// the credential kinds a route may take (Cred), the response recorder the
// request log and streams rely on, JSON answers and bodies (WriteJSON,
// DecodeJSON with the body limits), validation errors in the API's error
// envelope (Invalid, NotSupported), and the OpenAPI 3.1 document built
// from the routes' docs (RouteDoc, OpenAPI). It knows nothing of the
// store, authentication or audit.
package httpx
