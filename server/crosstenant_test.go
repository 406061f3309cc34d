package server_test

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// tenantRow is how one route must treat account B when account A's
// resources are named (or exist).
type tenantRow struct {
	cred   string // "key", "token" (B's access token), "oauth" (B's MCP OAuth access token) or "none"
	method string // for a pattern without one; default GET
	header []string
	path   string // with {sb} for A's sandbox, {akey} A's API key id, {assh} A's SSH key id, {asnap} A's snapshot id
	body   any
	// want is 404 when the route names A's resource; 0 means the route
	// answers B about B, which check (if set) verifies.
	want  int
	check func(t *testing.T, b *tenant, resp *http.Response, body []byte)
	// seesA: B may see A's data in the answer (B is a member of A's
	// organization, asking about it).
	seesA bool
}

// tenant is account B as the matrix sees it: the person's email, token
// and key (a key of an organization in the organization cases), and the
// email GET /v1/account shows for that key (the organization's).
type tenant struct {
	email, key, token, shown string
	oauth                    string // B's MCP OAuth access token, of B's personal account
}

// matrixCase is who A and B are: personal accounts, organizations (A's
// resources made with a key of A's organization; B acting with a key of
// its own organization), B a member of A's organization using their
// personal credentials, or B a removed member of A's organization.
type matrixCase struct {
	name     string
	aOrg     bool // A's resources belong to A's organization
	bOrg     bool // B acts with a key of B's own organization
	bMember  bool // B is a member of A's organization (personal credentials)
	bRemoved bool // B was an admin of A's organization, removed: every credentialed route answers 401
	bDemoted bool // B is an admin of A's organization demoted to member, with its admin key (E2B matrix)
}

// TestCrossTenantMatrix (issue 5, acceptance 1; issue 24, acceptance 3):
// every registered route, called by tenant B about tenant A's resources,
// answers 404 and changes nothing; routes that are not about a named
// resource show B only B's data. A route registered without a row here
// fails the test. The tenants are personal accounts or organizations
// (matrixCase): organization A against organization B, personal against
// organization both ways, a member of A's organization with personal
// credentials, and a removed member, whose key every route refuses.
//
// The proxied sandbox routes (server/proxy) share one handler, which
// resolves the sandbox first; their rows are derived from that table. All
// other routes are listed by hand.
func TestCrossTenantMatrix(t *testing.T) {
	t.Parallel()
	for _, c := range []matrixCase{
		{name: "personal"},
		{name: "org-vs-org", aOrg: true, bOrg: true},
		{name: "personal-vs-org", aOrg: true},
		{name: "org-vs-personal", bOrg: true},
		{name: "member-personal-vs-org", aOrg: true, bMember: true},
		{name: "removed-member", aOrg: true, bRemoved: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			crossTenantMatrix(t, c)
		})
	}
}

func crossTenantMatrix(t *testing.T, c matrixCase) {
	st := openStore(t, t.TempDir())
	e := newEnvWithStore(t, server.Config{BastionKey: testBastionKey, Secrets: testSecrets(t, st), MCPOAuth: true, DemoPlayground: true}, st)
	e.Sidecar.Route("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("B's request reached A's sidecar: %s %s", r.Method, r.URL.Path)
	})

	// A's organization, with an invite; A's resources are made with
	// aKey, the organization's key in the organization cases.
	orgA := e.newOrg(e.KeyA, "a-secret-org")
	resp, body := e.do("POST", "/v1/organizations/"+orgA.ID+"/invites", e.KeyA, api.CreateInviteRequest{Email: "a-invitee@example.com"})
	if resp.StatusCode != 201 {
		t.Fatalf("A's invite: %d %s", resp.StatusCode, body)
	}
	var invA api.OrganizationInvite
	mustUnmarshal(t, body, &invA)
	aKey := e.KeyA
	if c.aOrg {
		aKey = e.orgKey(e.KeyA, orgA.ID, "").Key
	}

	// A's resources.
	sb := e.create(aKey, api.CreateSandboxRequest{Label: "a-secret-label"})
	_, body = e.do("GET", "/v1/account", aKey, nil)
	var acctA api.Account
	mustUnmarshal(t, body, &acctA)
	line, _ := authorizedKey(t, "a-ssh-comment")
	resp, body = e.do("POST", "/v1/account/ssh-keys", aKey, api.AddSSHKeyRequest{PublicKey: line})
	if resp.StatusCode != 201 {
		t.Fatalf("A's ssh key: %d %s", resp.StatusCode, body)
	}
	var sshA api.SSHKey
	mustUnmarshal(t, body, &sshA)
	rulesA := api.AllowedCommands{Rules: []api.CommandRule{{Command: "arulecommand"}}}
	if resp, body := e.do("PUT", "/v1/account/allowed-commands", aKey, rulesA); resp.StatusCode != 200 {
		t.Fatalf("A's allowlist: %d %s", resp.StatusCode, body)
	}
	secretsOfA := []string{sb.ID, "a-secret-label", acctA.Email, acctA.ID, acctA.APIKey.ID, acctA.APIKey.Prefix, sshA.ID, sshA.Fingerprint, "a-ssh-comment", "arulecommand"}

	var volA api.Volume
	resp, body = e.do("POST", "/v1/volumes", aKey, api.CreateVolumeRequest{Label: "a-secret-volume"})
	if resp.StatusCode != 201 {
		t.Fatalf("A's volume: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &volA)
	var mcpA api.MCPConnection
	resp, body = e.do("POST", "/v1/mcp-connections", aKey, api.CreateMCPConnectionRequest{Label: "a-secret-conn", CatalogID: "github"})
	if resp.StatusCode != 201 {
		t.Fatalf("A's MCP connection: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &mcpA)
	secretsOfA = append(secretsOfA, volA.ID, "a-secret-volume", mcpA.ID, "a-secret-conn")
	var hookA api.Webhook
	resp, body = e.do("POST", "/v1/webhooks", aKey, api.CreateWebhookRequest{URL: "https://a-secret-hook.example.com/in", EventTypes: []string{api.EventSandboxCreated}, Description: "a-secret-hook-desc"})
	if resp.StatusCode != 201 {
		t.Fatalf("A's webhook: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &hookA)
	secretsOfA = append(secretsOfA, hookA.ID, "a-secret-hook", "a-secret-hook-desc", hookA.Secret)
	// A's snapshot, recorded directly: the fake driver keeps no data.
	snapA := &model.Snapshot{
		ID: model.NewID(), AccountID: acctA.ID, SandboxID: sb.ID, Label: "a-secret-snapshot", Status: api.SnapshotCompleted,
		Key: "sha256-" + strings.Repeat("a", 64), CreatedAt: time.Now(),
	}
	if err := e.Store.ReserveSnapshot(t.Context(), snapA, 0); err != nil {
		t.Fatal(err)
	}
	secretsOfA = append(secretsOfA, snapA.ID, "a-secret-snapshot")
	var secA api.Secret
	resp, body = e.do("POST", "/v1/secrets", aKey, api.CreateSecretRequest{Name: "a-secret-name", Value: "a-secret-value", AllowedHosts: []string{"a-host.example.com"}})
	if resp.StatusCode != 201 {
		t.Fatalf("A's secret: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &secA)
	secretsOfA = append(secretsOfA, secA.ID, "a-secret-name", "a-secret-value", "a-host.example.com")
	secretsOfA = append(secretsOfA, orgA.ID, "a-secret-org", invA.ID, invA.Token, "a-invitee@example.com")

	// B, with a password, an access token and an admin key.
	tok := e.signup("b-tenant@example.com", "b-password")
	b := &tenant{email: "b-tenant@example.com", token: tok.AccessToken, shown: "b-tenant@example.com"}
	b.key = e.newKey(b.token, "b-key", api.RoleAdmin).Key
	// B's MCP OAuth access token, and a client registered by someone else.
	bFlow := newOAuthFlow(t, e)
	b.oauth = bFlow.exchange(bFlow.authorize(b.email, "b-password")).AccessToken
	clientA := newOAuthFlow(t, e).clientID
	bPersonal := b.key
	switch {
	case c.bOrg:
		orgB := e.newOrg(b.token, "b-org")
		b.key, b.shown = e.orgKey(b.token, orgB.ID, api.RoleAdmin).Key, model.OrgEmail(orgB.ID)
	case c.bMember:
		e.join(e.KeyA, b.token, orgA.ID, b.email, api.OrgRoleMember)
	case c.bRemoved:
		e.join(e.KeyA, b.token, orgA.ID, b.email, api.OrgRoleAdmin)
		b.key = e.orgKey(b.token, orgA.ID, api.RoleAdmin).Key
	}
	bSSH := registerSSHKey(t, e, b.key) // what the bastion presents for B
	// B's own preview, whose token must not open A's sandbox.
	sbB := e.create(b.key, api.CreateSandboxRequest{Label: "b-preview-box"})
	resp, body = e.do("POST", sandboxPath(sbB.ID, "/preview/8080"), b.key, api.CreatePreviewRequest{})
	if resp.StatusCode != 201 {
		t.Fatalf("B's preview: %d %s", resp.StatusCode, body)
	}
	var prevB api.Preview
	mustUnmarshal(t, body, &prevB)
	if c.bRemoved {
		// B's sandbox and preview above are A's organization's; now B is
		// removed from it.
		resp, body := e.do("DELETE", "/v1/organizations/"+orgA.ID+"/members/"+accountID(t, e, bPersonal), e.KeyA, nil)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("remove B: %d %s", resp.StatusCode, body)
		}
	} else {
		// B cannot grant its sandbox A's secret by name, nor use it by
		// name in its own sandbox.
		resp, body = e.do("POST", "/v1/sandboxes", b.key, api.CreateSandboxRequest{SecretNames: []string{"a-secret-name"}})
		wantError(t, resp, body, http.StatusNotFound, api.CodeSecretNotFound)
		resp, body = e.do("POST", sandboxPath(sbB.ID, "/http-request"), b.key, api.HTTPRequest{URL: "https://a-host.example.com/?k={{secret:a-secret-name}}"})
		wantError(t, resp, body, http.StatusNotFound, api.CodeSecretNotReferenced)
	}
	isB := func(t *testing.T, b *tenant, _ *http.Response, body []byte) {
		if !strings.Contains(string(body), b.email) && !strings.Contains(string(body), b.shown) {
			t.Errorf("answer is not about B: %s", body)
		}
	}
	rows := map[string]tenantRow{
		"GET /health":        {cred: "none", path: "/health"},
		"GET /health/ready":  {cred: "none", path: "/health/ready"},
		"GET /metrics":       {cred: "none", path: "/metrics"},
		"GET /openapi.json":  {cred: "none", path: "/openapi.json"},
		"/":                  {cred: "key", path: "/v1/nothing/{sb}", want: 404},
		"POST /v1/sandboxes": {cred: "key", path: "/v1/sandboxes", body: api.CreateSandboxRequest{Label: "b-box"}},
		"GET /v1/sandboxes": {cred: "key", path: "/v1/sandboxes", check: func(t *testing.T, _ *tenant, _ *http.Response, body []byte) {
			if !strings.Contains(string(body), "b-box") {
				t.Errorf("B's list lacks B's own sandbox: %s", body)
			}
		}},
		"GET /v1/sandboxes/{id}":                  {cred: "key", path: "/v1/sandboxes/{sb}", want: 404},
		"DELETE /v1/sandboxes/{id}":               {cred: "key", path: "/v1/sandboxes/{sb}", want: 404},
		"POST /v1/sandboxes/{id}/extend":          {cred: "key", path: "/v1/sandboxes/{sb}/extend", body: api.ExtendSandboxRequest{LifetimeMinutes: 5}, want: 404},
		"POST /v1/sandboxes/{id}/pause":           {cred: "key", path: "/v1/sandboxes/{sb}/pause", body: api.PauseSandboxRequest{}, want: 404},
		"POST /v1/sandboxes/{id}/resume":          {cred: "key", path: "/v1/sandboxes/{sb}/resume", want: 404},
		"POST /v1/sandboxes/{id}/snapshots":       {cred: "key", path: "/v1/sandboxes/{sb}/snapshots", body: api.CreateSnapshotRequest{}, want: 404},
		"GET /v1/sandboxes/{id}/snapshots":        {cred: "key", path: "/v1/sandboxes/{sb}/snapshots", want: 404},
		"POST /v1/sandboxes/{id}/fork":            {cred: "key", path: "/v1/sandboxes/{sb}/fork", body: api.ForkSandboxRequest{Count: 1}, want: 404},
		"GET /v1/snapshots":                       {cred: "key", path: "/v1/snapshots"},
		"GET /v1/snapshots/{id}":                  {cred: "key", path: "/v1/snapshots/{asnap}", want: 404},
		"DELETE /v1/snapshots/{id}":               {cred: "key", path: "/v1/snapshots/{asnap}", want: 404},
		"POST /v1/snapshots/{id}/restore":         {cred: "key", path: "/v1/snapshots/{asnap}/restore", body: api.RestoreSnapshotRequest{}, want: 404},
		"POST /v1/sandboxes/{id}/exec":            {cred: "key", path: "/v1/sandboxes/{sb}/exec", body: api.ExecRequest{Command: "id"}, want: 404},
		"GET /v1/sandboxes/{id}/takeover":         {cred: "key", path: "/v1/sandboxes/{sb}/takeover", want: 404},
		"GET /v1/sandboxes/{id}/exec/interactive": {cred: "key", path: "/v1/sandboxes/{sb}/exec/interactive?command=true", want: 404},
		"POST /v1/sandboxes/{id}/takeover-token":  {cred: "key", path: "/v1/sandboxes/{sb}/takeover-token", want: 404},
		"GET /v1/sandboxes/{id}/takeover-recordings/{recording_id}": {
			cred: "key", path: "/v1/sandboxes/{sb}/takeover-recordings/r1", want: 404,
		},
		// The bastion asking for A's sandbox with B's registered SSH key.
		"POST /v1/bastion/takeover-token": {
			cred: "bastion", path: "/v1/bastion/takeover-token", want: 404,
			body: api.BastionTokenRequest{SandboxID: sb.ID, PublicKey: bSSH},
		},
		"GET /v1/sandboxes/{id}/log":   {cred: "key", path: "/v1/sandboxes/{sb}/log", want: 404},
		"GET /v1/sandboxes/{id}/stats": {cred: "key", path: "/v1/sandboxes/{sb}/stats", want: 404},
		"GET /v1/sandboxes/{id}/watch": {cred: "key", path: "/v1/sandboxes/{sb}/watch", want: 404},

		"GET /v1/account/allowed-commands": {cred: "key", path: "/v1/account/allowed-commands"},
		"PUT /v1/account/allowed-commands": {
			cred: "key", path: "/v1/account/allowed-commands",
			body: api.AllowedCommands{Rules: []api.CommandRule{{Command: "brulecommand"}}},
		},
		"DELETE /v1/account/allowed-commands": {cred: "key", path: "/v1/account/allowed-commands"},

		"POST /v1/auth/signup": {cred: "none", path: "/v1/auth/signup", body: api.Credentials{Email: "c-tenant@example.com", Password: "c-password"}},
		"POST /v1/auth/login": {
			cred: "none", path: "/v1/auth/login", body: api.Credentials{Email: b.email, Password: "b-password"},
			check: isB,
		},
		"POST /v1/api-keys": {cred: "token", path: "/v1/api-keys", body: api.CreateAPIKeyRequest{Name: "b-second"}, check: func(t *testing.T, b *tenant, _ *http.Response, body []byte) {
			var k api.APIKeyCreated
			mustUnmarshal(t, body, &k)
			_, got := e.do("GET", "/v1/account", k.Key, nil)
			isB(t, b, nil, got)
		}},
		"GET /v1/api-keys":             {cred: "token", path: "/v1/api-keys"},
		"DELETE /v1/api-keys/{key_id}": {cred: "token", path: "/v1/api-keys/{akey}", want: 404},
		"GET /v1/account/me":           {cred: "token", path: "/v1/account/me", check: isB},
		"GET /v1/account":              {cred: "key", path: "/v1/account", check: isB},
		"PATCH /v1/account":            {cred: "key", path: "/v1/account", body: api.AccountUpdate{}, check: isB},
		"GET /v1/usage":                {cred: "key", path: "/v1/usage"},
		"GET /v1/host": {cred: "key", path: "/v1/host", check: func(t *testing.T, _ *tenant, _ *http.Response, body []byte) {
			if strings.Contains(string(body), sb.ID) {
				t.Errorf("B's host status names A's sandbox: %s", body)
			}
		}},
		"GET /v1/account/ssh-keys":             {cred: "key", path: "/v1/account/ssh-keys"},
		"POST /v1/account/ssh-keys":            {cred: "key", path: "/v1/account/ssh-keys", body: api.AddSSHKeyRequest{PublicKey: mustAuthorizedKey(t)}},
		"DELETE /v1/account/ssh-keys/{key_id}": {cred: "key", path: "/v1/account/ssh-keys/{assh}", want: 404},

		// This server keeps no images: every account gets 422
		// not_supported (TestImagesWithoutStore). Images' tenancy with a
		// store: servertest's checkOtherTenant.
		"POST /v1/images":          {cred: "key", path: "/v1/images", want: 422},
		"POST /v1/images/import":   {cred: "key", path: "/v1/images/import", want: 422},
		"GET /v1/images":           {cred: "key", path: "/v1/images", want: 422},
		"GET /v1/images/{id}":      {cred: "key", path: "/v1/images/img0", want: 422},
		"GET /v1/images/{id}/logs": {cred: "key", path: "/v1/images/img0/logs", want: 422},
		"GET /v1/images/{id}/log":  {cred: "key", path: "/v1/images/img0/log", want: 422},
		"DELETE /v1/images/{id}":   {cred: "key", path: "/v1/images/img0", want: 422},

		"POST /v1/volumes":                                          {cred: "key", path: "/v1/volumes", body: api.CreateVolumeRequest{Label: "b-volume"}},
		"GET /v1/volumes":                                           {cred: "key", path: "/v1/volumes"},
		"GET /v1/volumes/{id}":                                      {cred: "key", path: "/v1/volumes/{avol}", want: 404},
		"DELETE /v1/volumes/{id}":                                   {cred: "key", path: "/v1/volumes/{avol}", want: 404},
		"POST /v1/mcp-connections":                                  {cred: "key", path: "/v1/mcp-connections", body: api.CreateMCPConnectionRequest{Label: "b-conn", CatalogID: "github"}},
		"GET /v1/mcp-connections":                                   {cred: "key", path: "/v1/mcp-connections"},
		"GET /v1/mcp-connections/{id}":                              {cred: "key", path: "/v1/mcp-connections/{amcp}", want: 404},
		"DELETE /v1/mcp-connections/{id}":                           {cred: "key", path: "/v1/mcp-connections/{amcp}", want: 404},
		"POST /v1/webhooks":                                         {cred: "key", path: "/v1/webhooks", body: api.CreateWebhookRequest{URL: "https://b-hook.example.com/in", EventTypes: []string{api.EventAuditLogEntry}}},
		"GET /v1/webhooks":                                          {cred: "key", path: "/v1/webhooks"},
		"GET /v1/webhooks/{id}":                                     {cred: "key", path: "/v1/webhooks/{ahook}", want: 404},
		"DELETE /v1/webhooks/{id}":                                  {cred: "key", path: "/v1/webhooks/{ahook}", want: 404},
		"GET /v1/webhooks/{id}/deliveries":                          {cred: "key", path: "/v1/webhooks/{ahook}/deliveries", want: 404},
		"POST /v1/webhooks/{id}/test":                               {cred: "key", path: "/v1/webhooks/{ahook}/test", want: 404},
		"POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver": {cred: "key", path: "/v1/webhooks/{ahook}/deliveries/d1/redeliver", want: 404},
		"POST /v1/secrets":                                          {cred: "key", path: "/v1/secrets", body: api.CreateSecretRequest{Name: "b-secret", Value: "b-value", AllowedHosts: []string{"b-host.example.com"}}},
		"GET /v1/secrets": {cred: "key", path: "/v1/secrets", check: func(t *testing.T, _ *tenant, _ *http.Response, body []byte) {
			if !strings.Contains(string(body), "b-secret") {
				t.Errorf("B's list lacks B's own secret: %s", body)
			}
		}},
		// By id, and by A's secret's name, which B cannot name either.
		"PUT /v1/secrets/{id}":                     {cred: "key", path: "/v1/secrets/{asec}", body: api.UpdateSecretRequest{Value: "b-overwrite"}, want: 404},
		"DELETE /v1/secrets/{id}":                  {cred: "key", path: "/v1/secrets/{asec}", want: 404},
		"POST /v1/sandboxes/{id}/preview/{port}":   {cred: "key", path: "/v1/sandboxes/{sb}/preview/8080", body: api.CreatePreviewRequest{}, want: 404},
		"DELETE /v1/sandboxes/{id}/preview/{port}": {cred: "key", path: "/v1/sandboxes/{sb}/preview/8080", want: 404},
		"GET /v1/sandboxes/{id}/previews":          {cred: "key", path: "/v1/sandboxes/{sb}/previews", want: 404},
		// The preview proxy takes a preview's token, not a key: B's token
		// names B's sandbox and port only.
		"/preview/{id}/{port}/{path...}": {cred: "none", path: "/preview/{sb}/8080/?" + api.PreviewTokenParam + "=" + prevB.Token, want: http.StatusUnauthorized},
		// Issue 26: the storage routes (no storage configured here: A's
		// own call would answer 503; B's is 404 before that is looked at).
		"GET /v1/sandboxes/{id}/sync":              {cred: "key", path: "/v1/sandboxes/{sb}/sync", want: 404},
		"POST /v1/sandboxes/{id}/sync/flush":       {cred: "key", path: "/v1/sandboxes/{sb}/sync/flush", want: 404},
		"GET /v1/sandboxes/{id}/storage/files":     {cred: "key", path: "/v1/sandboxes/{sb}/storage/files", want: 404},
		"GET /v1/sandboxes/{id}/storage/files/raw": {cred: "key", path: "/v1/sandboxes/{sb}/storage/files/raw?path=a.txt", want: 404},
		"DELETE /v1/sandboxes/{id}/storage":        {cred: "key", path: "/v1/sandboxes/{sb}/storage", want: 404},
		"POST /v1/sandboxes/{id}/http-request":     {cred: "key", path: "/v1/sandboxes/{sb}/http-request", body: api.HTTPRequest{URL: "https://a-host.example.com/{{secret:a-secret-name}}"}, want: 404},

		// Organizations: B is no member of A's; a token or personal key
		// makes B's own organization, and A's invite is for another email.
		"POST /v1/organizations": {cred: "token", path: "/v1/organizations", body: api.CreateOrganizationRequest{Name: "b-second-org"}},
		"GET /v1/organizations":  {cred: "key", path: "/v1/organizations"},
		"POST /v1/organizations/accept-invite": {
			cred: "token", path: "/v1/organizations/accept-invite", body: api.AcceptInviteRequest{Token: invA.Token}, want: http.StatusForbidden,
		},
		"GET /v1/organizations/{org_id}":                         {cred: "key", path: "/v1/organizations/{aorg}", want: 404},
		"PATCH /v1/organizations/{org_id}":                       {cred: "token", path: "/v1/organizations/{aorg}", body: api.UpdateOrganizationRequest{}, want: 404},
		"GET /v1/organizations/{org_id}/members":                 {cred: "key", path: "/v1/organizations/{aorg}/members", want: 404},
		"PATCH /v1/organizations/{org_id}/members/{account_id}":  {cred: "token", path: "/v1/organizations/{aorg}/members/{aacct}", body: api.UpdateMemberRequest{Role: api.OrgRoleMember}, want: 404},
		"DELETE /v1/organizations/{org_id}/members/{account_id}": {cred: "token", path: "/v1/organizations/{aorg}/members/{aacct}", want: 404},
		"POST /v1/organizations/{org_id}/invites":                {cred: "token", path: "/v1/organizations/{aorg}/invites", body: api.CreateInviteRequest{Email: "b-friend@example.com"}, want: 404},
		"GET /v1/organizations/{org_id}/invites":                 {cred: "token", path: "/v1/organizations/{aorg}/invites", want: 404},
		"DELETE /v1/organizations/{org_id}/invites/{invite_id}":  {cred: "token", path: "/v1/organizations/{aorg}/invites/{ainv}", want: 404},
		"POST /v1/organizations/{org_id}/api-keys":               {cred: "token", path: "/v1/organizations/{aorg}/api-keys", body: api.CreateAPIKeyRequest{Name: "b-in-a"}, want: 404},

		// The OAuth authorization server: nothing in it belongs to a
		// tenant but grants, which only their tokens reach (below).
		"GET /.well-known/oauth-authorization-server":   {cred: "none", path: "/.well-known/oauth-authorization-server"},
		"GET /.well-known/oauth-protected-resource":     {cred: "none", path: "/.well-known/oauth-protected-resource"},
		"GET /.well-known/oauth-protected-resource/mcp": {cred: "none", path: "/.well-known/oauth-protected-resource/mcp"},
		"POST /oauth/register":                          {cred: "none", path: "/oauth/register", body: map[string]any{"redirect_uris": []string{"https://b.example.com/cb"}}},
		"DELETE /oauth/register/{client_id}":            {cred: "none", path: "/oauth/register/{aclient}", want: http.StatusUnauthorized},
		"GET /oauth/authorize":                          {cred: "none", path: "/oauth/authorize?client_id={aclient}&redirect_uri=https://b.example.com/cb", want: http.StatusBadRequest},
		"POST /oauth/authorize/login":                   {cred: "none", path: "/oauth/authorize/login", want: http.StatusBadRequest},
		"POST /oauth/authorize/decide":                  {cred: "none", path: "/oauth/authorize/decide", want: http.StatusBadRequest},
		"POST /oauth/token":                             {cred: "none", path: "/oauth/token", want: http.StatusUnauthorized},
		"POST /oauth/revoke":                            {cred: "none", path: "/oauth/revoke", want: http.StatusBadRequest},

		// The demo playground: a demo token names a demo sandbox only.
		"POST /v1/demo/sandboxes":           {cred: "none", path: "/v1/demo/sandboxes"},
		"POST /v1/demo/sandboxes/{id}/exec": {cred: "none", path: "/v1/demo/sandboxes/{sb}/exec", header: []string{"X-Demo-Token", "guess"}, body: map[string]string{"command": "id"}, want: 404},
		"DELETE /v1/demo/sandboxes/{id}":    {cred: "none", path: "/v1/demo/sandboxes/{sb}", header: []string{"X-Demo-Token", "guess"}, want: 404},

		// The operator's routes: B is no operator (TestAdminOperator is).
		"GET /v1/admin/metrics":    {cred: "key", path: "/v1/admin/metrics", want: http.StatusForbidden},
		"GET /v1/admin/audit-log":  {cred: "key", path: "/v1/admin/audit-log?account_id={aacct}", want: http.StatusForbidden},
		"GET /v1/admin/access-log": {cred: "key", path: "/v1/admin/access-log", want: http.StatusForbidden},

		// MCP tools are the API in-process; B's tool calls see B's data only.
		"/mcp/": {
			cred: "key", method: "POST", path: "/mcp/",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sandboxes","arguments":{}}}`,
			header: []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"},
			check: func(t *testing.T, _ *tenant, _ *http.Response, body []byte) {
				if !strings.Contains(string(body), `"result"`) {
					t.Errorf("tools/call list_sandboxes: %s", body)
				}
			},
		},
	}
	// The proxied routes: one handler, sandbox first.
	for _, rt := range server.ProxyRoutes() {
		method, path, _ := strings.Cut(rt, " ")
		p := strings.NewReplacer("{pid}", "p1", "{lsp_id}", "l1").Replace(path)
		rows[method+" /v1/sandboxes/{id}"+path] = tenantRow{cred: "key", path: "/v1/sandboxes/{sb}" + p + "?path=/workspace/x", body: "{}", want: 404}
	}

	if c.bMember {
		// B is a member of A's organization: it sees the organization and
		// its members, may issue itself a member key of it, and manages
		// nothing.
		for pattern, row := range rows {
			if !strings.Contains(row.path, "{aorg}") && pattern != "GET /v1/organizations" {
				continue
			}
			switch pattern {
			case "GET /v1/organizations", "GET /v1/organizations/{org_id}", "GET /v1/organizations/{org_id}/members":
				row.want, row.seesA = 0, true
			case "POST /v1/organizations/{org_id}/api-keys":
				row.want = 0
			default:
				row.want = http.StatusForbidden
			}
			rows[pattern] = row
		}
	}

	expand := strings.NewReplacer("{aclient}", clientA, "{aorg}", orgA.ID, "{aacct}", e.AcctA.ID, "{ainv}", invA.ID, "{sb}", sb.ID, "{akey}", acctA.APIKey.ID, "{assh}", sshA.ID, "{avol}", volA.ID, "{amcp}", mcpA.ID, "{asec}", secA.ID, "{asnap}", snapA.ID, "{ahook}", hookA.ID)
	nobody := func(path, id string) string {
		return strings.NewReplacer("{aorg}", id, "{aacct}", id, "{ainv}", id, "{sb}", id, "{akey}", id, "{assh}", id, "{avol}", id, "{amcp}", id, "{asec}", id, "{asnap}", id, "{ahook}", id).Replace(path)
	}
	routes := e.Server.Routes()
	for _, pattern := range routes {
		t.Run(pattern, func(t *testing.T) {
			row, ok := rows[pattern]
			if !ok {
				t.Fatalf("route %q has no row in the cross-tenant matrix: add one", pattern)
			}
			method, _, found := strings.Cut(pattern, " ")
			if !found {
				method = cmp.Or(row.method, "GET")
			}
			cred := map[string]string{"key": b.key, "token": b.token, "oauth": b.oauth, "none": "", "bastion": testBastionKey}[row.cred]
			path := expand.Replace(row.path)
			if c.bRemoved && (row.cred == "key" || row.cred == "token") && pattern != "/" { // "/" answers 404 unauthenticated
				// The removed member's key of A's organization: refused
				// by every route that takes a credential, at once.
				resp, body := e.do(method, path, b.key, row.body, row.header...)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("removed member's key: status = %d, want 401: %s", resp.StatusCode, body)
				}
				return
			}
			resp, body := e.do(method, path, cred, row.body, row.header...)
			if row.want == http.StatusNotFound {
				ae := wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
				// Exactly what a resource that does not exist gets.
				none := model.NewID()
				_, body2 := e.do(method, nobody(row.path, none), cred, row.body)
				ae2 := apiError(t, body2)
				ae.Message = strings.NewReplacer(orgA.ID, "ID", e.AcctA.ID, "ID", invA.ID, "ID", sb.ID, "ID", acctA.APIKey.ID, "ID", sshA.ID, "ID", volA.ID, "ID", mcpA.ID, "ID", secA.ID, "ID", snapA.ID, "ID", hookA.ID, "ID").Replace(ae.Message)
				ae2.Message = strings.ReplaceAll(ae2.Message, none, "ID")
				if ae.Code != ae2.Code || ae.Message != ae2.Message || ae.Hint != ae2.Hint {
					t.Errorf("404 for A's resource differs from one for no resource:\n%+v\n%+v", ae, ae2)
				}
			} else if row.want != 0 {
				if resp.StatusCode != row.want {
					t.Errorf("status = %d, want %d: %s", resp.StatusCode, row.want, body)
				}
			} else if resp.StatusCode >= 300 {
				t.Fatalf("status = %d, want success: %s", resp.StatusCode, body)
			}
			for _, s := range secretsOfA {
				if !row.seesA && strings.Contains(string(body), s) && !strings.Contains(path, s) {
					t.Errorf("B's answer contains A's %q: %s", s, body)
				}
			}
			if row.check != nil {
				row.check(t, b, resp, body)
			}
		})
	}
	for pattern := range rows {
		if !slices.Contains(routes, pattern) {
			t.Errorf("the matrix has a row for %q, which is not registered", pattern)
		}
	}

	bastionTenancy(t, e, aKey, bSSH)

	// B's MCP OAuth token (of B's personal account) reaches A's sandbox
	// exactly as one that does not exist, and lists none of A's.
	text, isErr := mcpCall(t, e, b.oauth, "get_sandbox", map[string]string{"session_id": sb.ID})
	none := model.NewID()
	text2, _ := mcpCall(t, e, b.oauth, "get_sandbox", map[string]string{"session_id": none})
	if !isErr || strings.ReplaceAll(text, sb.ID, "ID") != strings.ReplaceAll(text2, none, "ID") {
		t.Errorf("B's OAuth get_sandbox of A's sandbox = %q (isError %v); of none: %q", text, isErr, text2)
	}
	if text, _ := mcpCall(t, e, b.oauth, "list_sandboxes", map[string]any{}); strings.Contains(text, sb.ID) || strings.Contains(text, "a-secret-label") {
		t.Errorf("B's OAuth list_sandboxes shows A's sandbox: %q", text)
	}

	// Nothing of A's changed.
	resp, body = e.do("GET", sandboxPath(sb.ID), aKey, nil)
	var got api.Sandbox
	mustUnmarshal(t, body, &got)
	if resp.StatusCode != 200 || got.Status != api.StatusActive || !got.ExpiresAt.Equal(sb.ExpiresAt) {
		t.Errorf("A's sandbox after B's requests: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("GET", "/v1/account", aKey, nil); resp.StatusCode != 200 {
		t.Errorf("A's key stopped working: %d %s", resp.StatusCode, body)
	}
	if _, body := e.do("GET", "/v1/account/ssh-keys", aKey, nil); !strings.Contains(string(body), sshA.ID) {
		t.Errorf("A's ssh key is gone: %s", body)
	}
	if _, body := e.do("GET", "/v1/account/allowed-commands", aKey, nil); !strings.Contains(string(body), "arulecommand") {
		t.Errorf("A's allowlist changed: %s", body)
	}
	_, body = e.do("GET", "/v1/secrets", aKey, nil)
	var secsA []api.Secret
	mustUnmarshal(t, body, &secsA)
	if len(secsA) != 1 || secsA[0].ID != secA.ID || !secsA[0].UpdatedAt.Equal(secA.UpdatedAt) {
		t.Errorf("A's secret changed: %s", body)
	}
}

func mustAuthorizedKey(t *testing.T) string {
	line, _ := authorizedKey(t, "")
	return line
}
