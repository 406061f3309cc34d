// Package orgs serves organizations (issue 24): tenants that several
// people reach as members, with the roles owner, admin and member,
// single-use invites bound to the invitee's email, the rule that an
// organization keeps at least one owner, and per-organization quotas.
//
// An organization is a tenant like a personal account: it has an account
// row, so every account-scoped record (sandboxes, keys, images, volumes,
// secrets, snapshots, webhooks, the audit log) belongs to it through the
// account id it already carries, and server/internal/authz scopes it as
// it scopes a person's. A member acts for it with an API key the
// organization issued to them (POST /v1/organizations/{org_id}/api-keys):
// the key names its holder, each request loads the holder's current role
// with the key, and the key's effective role is the lesser of its own and
// that role (model.EffectiveKeyRole). Removing a member revokes their keys
// of the organization at once; demoting one to member ends what their
// admin keys held as admin keys (Deps.Demoted: terminals, streams, the
// takeover tokens they minted) and deletes the SSH keys they registered,
// the keys going on as member keys; docs/organizations.md has the rules.
//
// Every handler authorizes first (access): the person behind the
// credential must be a member of the organization with the role the
// route needs, and an organization's key reaches its own organization
// only. Its routes are in routes.go; what it needs is in Deps.
package orgs
