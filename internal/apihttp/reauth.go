package apihttp

import "context"

// reauthKey is the context key of WithReauthHint's hint.
type reauthKey struct{}

// WithReauthHint marks ctx as a request of a client whose credential is
// not the person's own to replace: the web console's session key, which
// the browser user never saw. A revoked or expired credential is then
// answered with hint (sign in again there) in place of the CLI's
// (`boxkite keys create`, `boxkite login`). It lives here, not in the
// authorization package that reads it, so that the console, which sees
// only the API's wire types, can set it.
func WithReauthHint(ctx context.Context, hint string) context.Context {
	return context.WithValue(ctx, reauthKey{}, hint)
}

// ReauthHint returns the hint WithReauthHint put in ctx, if any.
func ReauthHint(ctx context.Context) (string, bool) {
	hint, ok := ctx.Value(reauthKey{}).(string)
	return hint, ok
}
