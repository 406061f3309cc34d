// Package authz says who a request acts for and what it may reach: the
// Caller the guard authenticated (an account with its API key or takeover
// Grant), carried in the request's httpx.Info. Subsystems read the caller
// here rather than from the server.
//
// The account is the tenant whose records a request reaches: a person's
// own, or an organization's (server/orgs) for a key the organization
// issued one of its members. Such a key arrives with its Role lowered to
// the lesser of its own and the member's organization role (OrgKey;
// AuthenticateKey, which both the REST guard and the E2B API use), and
// Caller.PersonID names the member behind it.
package authz
