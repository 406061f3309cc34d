// Package preview serves preview URLs (issue 23): a URL with a short-lived
// token that shows a web app listening on a port inside a sandbox, over
// HTTP and WebSocket, to a browser or curl. The token is exchanged on the
// first visit for an HttpOnly cookie scoped to the preview's origin;
// previews are served host-based (<port>-<sandbox id>.<preview domain>,
// *.localhost in local mode) with a path form (/preview/<id>/<port>/) as a
// fallback. Requests go to the sandbox's sidecar, which dials the port in
// the sandbox's own network namespace, whatever the driver.
//
// It keeps its records through its own Store (server/sqlstore implements
// it) and reaches sandboxes through ControlPlane, which the server root
// implements; creation, revocation and request counts are audited.
package preview
