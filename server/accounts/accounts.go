package accounts

import (
	"bytes"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

const (
	maxEmailLen     = 254 // RFC 5321's limit on a forward path
	maxSSHKeyLine   = 16 << 10
	minRSAKeyBits   = 2048
	maxSSHKeyName   = 200
	tokenTypeBearer = "bearer"
)

// normalizeEmail lower-cases and trims an address and checks its shape:
// one @, something on both sides, no spaces or control characters.
// Delivery is not verified.
func normalizeEmail(s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	local, domain, ok := strings.Cut(e, "@")
	switch {
	case e == "":
		return "", httpx.Invalid("email", "email is required", "")
	case len(e) > maxEmailLen:
		return "", httpx.Invalid("email", fmt.Sprintf("email is longer than %d characters", maxEmailLen), "")
	case !ok || local == "" || domain == "" || strings.Contains(domain, "@") ||
		strings.IndexFunc(e, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "", httpx.Invalid("email", "email is not an email address", "use an address such as you@example.com")
	}
	return e, nil
}

func checkPassword(p string) error {
	if n := utf8.RuneCountInString(p); n < api.MinPasswordLen || n > api.MaxPasswordLen {
		return httpx.Invalid("password", fmt.Sprintf("password must be %d to %d characters", api.MinPasswordLen, api.MaxPasswordLen), "")
	}
	return nil
}

// signup serves POST /v1/auth/signup.
func (s *Service) signup(w http.ResponseWriter, r *http.Request) error {
	var req api.Credentials
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	email, err := normalizeEmail(req.Email)
	if err != nil {
		return err
	}
	if err := checkPassword(req.Password); err != nil {
		return err
	}
	ctx := r.Context()
	hash, err := s.d.Hasher.Hash(ctx, req.Password)
	if err != nil {
		return fmt.Errorf("hash password: %w", err)
	}
	acct := &model.Account{ID: model.NewID(), Email: email, CreatedAt: s.d.Now()}
	if err := s.d.Store.CreateAccountWithPassword(ctx, acct, hash); err != nil {
		if errors.Is(err, model.ErrConflict) {
			return api.Errorf(http.StatusConflict, api.CodeEmailTaken, "an account with this email exists").
				WithHint("log in instead: `boxkite login`")
		}
		return fmt.Errorf("create account: %w", err)
	}
	s.d.Log.InfoContext(ctx, "account created", "account", acct.ID)
	return s.writeToken(w, r, http.StatusCreated, acct)
}

var errInvalidCredentials = &api.Error{
	Status: http.StatusUnauthorized, Code: api.CodeInvalidCredentials,
	Message: "wrong email or password",
	Hint:    "check both; `boxkite signup` creates an account",
}

// login serves POST /v1/auth/login.
func (s *Service) login(w http.ResponseWriter, r *http.Request) error {
	var req api.Credentials
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	acct, err := s.CheckLogin(w, r, req.Email, req.Password)
	if err != nil {
		return err
	}
	return s.writeToken(w, r, http.StatusOK, acct)
}

// CheckLogin returns the account of email if password is its password,
// as POST /v1/auth/login checks it (the OAuth consent page signs in with
// it too). An unknown email and a wrong password get the same answer
// after the same work (a dummy hash is checked), so neither the answer
// nor the timing tells which emails have accounts. Attempts count against
// the per-email login rate limit (429 on w).
func (s *Service) CheckLogin(w http.ResponseWriter, r *http.Request, email, password string) (*model.Account, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	switch {
	case email == "":
		return nil, httpx.Invalid("email", "email is required", "")
	case password == "":
		return nil, httpx.Invalid("password", "password is required", "")
	case len(email) > maxEmailLen || len(password) > 4*api.MaxPasswordLen:
		return nil, errInvalidCredentials
	}
	// Per email too, so guessing one account's password from many
	// addresses is as slow as from one.
	if err := s.d.LoginRate(w, email); err != nil {
		return nil, err
	}
	ctx := r.Context()
	acct, hash, err := s.d.Store.PasswordHash(ctx, email)
	if err != nil && !errors.Is(err, model.ErrNotFound) {
		return nil, fmt.Errorf("look up account: %w", err)
	}
	ok, err := s.d.Hasher.Verify(ctx, hash, password)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.d.Log.ErrorContext(ctx, "stored password hash is unusable", "err", err)
		return nil, errInvalidCredentials
	}
	if !ok || acct == nil {
		return nil, errInvalidCredentials
	}
	return acct, nil
}

func (s *Service) writeToken(w http.ResponseWriter, r *http.Request, status int, acct *model.Account) error {
	tok, ttl, err := s.d.IssueAccessToken(r.Context(), acct)
	if err != nil {
		return err
	}
	// A token in a cached response would outlive its purpose.
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, api.TokenResponse{
		AccessToken: tok, TokenType: tokenTypeBearer, ExpiresIn: int(ttl.Seconds()), Account: accountToAPI(acct),
	})
	return nil
}

func accountToAPI(a *model.Account) api.Account {
	return api.Account{ID: a.ID, Email: a.Email, CreatedAt: a.CreatedAt.UTC(), ScrubOutput: !a.KeepOutputSecrets}
}

func (s *Service) keyToAPI(k *model.APIKey) api.APIKey { return k.ToAPI(s.d.Now()) }

// getAccount serves GET /v1/account (API key): the account and the key
// the request was made with.
func (s *Service) getAccount(w http.ResponseWriter, r *http.Request) error {
	ri := authz.From(r.Context())
	out := accountToAPI(ri.Account)
	k := s.keyToAPI(ri.Key)
	out.APIKey = &k
	if org := ri.Org(); org != nil {
		out.Organization = &api.AccountOrganization{ID: ri.Account.ID, Name: org.Name, Role: ri.Key.MemberRole, MemberID: ri.Key.MemberID}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// updateAccount serves PATCH /v1/account: the account's settings. It
// takes an access token or an admin key: an agent holding a member key
// must not turn off the scrubbing of what it is shown.
func (s *Service) updateAccount(w http.ResponseWriter, r *http.Request) error {
	var req api.AccountUpdate
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	ri := authz.From(r.Context())
	acct := *ri.Account
	if req.ScrubOutput != nil {
		acct.KeepOutputSecrets = !*req.ScrubOutput
		if err := s.d.Store.SetKeepOutputSecrets(r.Context(), acct.ID, acct.KeepOutputSecrets); err != nil {
			return fmt.Errorf("update account: %w", err)
		}
	}
	out := accountToAPI(&acct)
	if ri.Key != nil {
		k := s.keyToAPI(ri.Key)
		out.APIKey = &k
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// getAccountMe serves GET /v1/account/me (access token).
func (s *Service) getAccountMe(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, accountToAPI(authz.Account(r.Context())))
	return nil
}

// createAPIKey serves POST /v1/api-keys. The key itself is in this answer
// only; the store keeps its hash.
func (s *Service) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateAPIKeyRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	name := strings.TrimSpace(req.Name)
	if n := utf8.RuneCountInString(name); n < 1 || n > api.MaxKeyNameLen || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return httpx.Invalid("name", fmt.Sprintf("name must be 1 to %d printable characters", api.MaxKeyNameLen), `e.g. {"name": "ci"}`)
	}
	expires, err := httpx.KeyExpiry(s.d.Now(), req.ExpiresInSeconds)
	if err != nil {
		return err
	}
	role := req.Role
	switch role {
	case "":
		role = model.RoleAdmin
	case model.RoleAdmin, model.RoleMember:
	default:
		return httpx.Invalid("role", fmt.Sprintf("role %q is not admin or member", req.Role), "")
	}
	secret := model.NewAPIKey()
	k := &model.APIKey{
		ID: model.NewID(), AccountID: authz.Account(r.Context()).ID, Name: name,
		Hash: model.HashAPIKey(secret), Prefix: model.DisplayPrefix(secret), Role: role, CreatedAt: s.d.Now(),
		ExpiresAt: expires,
	}
	if ck := authz.From(r.Context()).Key; ck != nil && ck.MemberID != "" {
		// An organization's admin key makes keys of the organization held
		// by the same member, which end with their membership.
		k.MemberID = ck.MemberID
	}
	if err := s.d.Store.CreateAPIKey(r.Context(), k); err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, api.APIKeyCreated{APIKey: s.keyToAPI(k), Key: secret})
	return nil
}

// listAPIKeys serves GET /v1/api-keys, revoked keys included.
func (s *Service) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.d.Store.ListAPIKeys(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list api keys: %w", err)
	}
	out := make([]api.APIKey, len(keys))
	for i, k := range keys {
		out[i] = s.keyToAPI(k)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// revokeAPIKey serves DELETE /v1/api-keys/{key_id}. Every request
// looks its key up in the store, so a revoked key fails from the next
// request on.
func (s *Service) revokeAPIKey(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("key_id")
	err := s.d.Store.RevokeAPIKey(r.Context(), authz.Account(r.Context()).ID, id, s.d.Now())
	if errors.Is(err, model.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "api key %s not found", id).
			WithHint("list your keys with `boxkite keys ls`; a revoked key cannot be revoked again")
	}
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	s.d.Revoked(id) // what the key holds ends now
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func sshKeyToAPI(k *model.SSHKey) api.SSHKey {
	return api.SSHKey{ID: k.ID, Name: k.Name, PublicKey: k.PublicKey, Fingerprint: k.Fingerprint, CreatedAt: k.CreatedAt.UTC()}
}

// listSSHKeys serves GET /v1/account/ssh-keys.
func (s *Service) listSSHKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.d.Store.ListSSHKeys(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list ssh keys: %w", err)
	}
	out := make([]api.SSHKey, len(keys))
	for i, k := range keys {
		out[i] = sshKeyToAPI(k)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// addSSHKey serves POST /v1/account/ssh-keys.
func (s *Service) addSSHKey(w http.ResponseWriter, r *http.Request) error {
	var req api.AddSSHKeyRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	k, err := parseSSHKey(req.PublicKey, req.Name)
	if err != nil {
		return err
	}
	k.ID, k.AccountID, k.CreatedAt = model.NewID(), authz.Account(r.Context()).ID, s.d.Now()
	if ck := authz.From(r.Context()).Key; ck != nil {
		k.MemberID = ck.MemberID // an organization's member: removed with them
	}
	if err := s.d.Store.CreateSSHKey(r.Context(), k); err != nil {
		if errors.Is(err, model.ErrConflict) {
			return api.Errorf(http.StatusConflict, api.CodeSSHKeyExists, "the key %s is registered already", k.Fingerprint).
				WithHint("`boxkite ssh-keys ls` lists your keys; a key can belong to one account only")
		}
		return fmt.Errorf("add ssh key: %w", err)
	}
	httpx.WriteJSON(w, http.StatusCreated, sshKeyToAPI(k))
	return nil
}

// parseSSHKey validates one authorized_keys line and names the key: the
// given name, else the key's comment, else its type.
func parseSSHKey(line, name string) (*model.SSHKey, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, httpx.Invalid("public_key", "public_key is required", "paste the contents of ~/.ssh/id_ed25519.pub")
	}
	if len(line) > maxSSHKeyLine || strings.ContainsAny(line, "\r\n") {
		return nil, httpx.Invalid("public_key", "public_key must be a single key on one line", "")
	}
	pub, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, httpx.Invalid("public_key", "public_key is not an OpenSSH public key in authorized_keys format",
			"paste the contents of ~/.ssh/id_ed25519.pub, which starts with ssh-ed25519")
	}
	switch {
	case len(options) > 0:
		return nil, httpx.Invalid("public_key", "public_key must not carry authorized_keys options", "remove "+strings.Join(options, ","))
	case len(bytes.TrimSpace(rest)) > 0:
		return nil, httpx.Invalid("public_key", "public_key must be a single key", "")
	}
	if ck, ok := pub.(ssh.CryptoPublicKey); ok {
		if rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok && rk.N.BitLen() < minRSAKeyBits {
			return nil, httpx.Invalid("public_key", fmt.Sprintf("RSA keys must have at least %d bits", minRSAKeyBits),
				"use an ed25519 key: ssh-keygen -t ed25519")
		}
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = strings.TrimSpace(comment)
	}
	if name == "" {
		name = pub.Type()
	}
	if utf8.RuneCountInString(name) > maxSSHKeyName || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return nil, httpx.Invalid("name", fmt.Sprintf("name must be at most %d printable characters", maxSSHKeyName), "")
	}
	return &model.SSHKey{
		Name:        name,
		PublicKey:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))),
		Fingerprint: ssh.FingerprintSHA256(pub),
	}, nil
}

// removeSSHKey serves DELETE /v1/account/ssh-keys/{key_id}.
func (s *Service) removeSSHKey(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("key_id")
	err := s.d.Store.DeleteSSHKey(r.Context(), authz.Account(r.Context()).ID, id)
	if errors.Is(err, model.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "ssh key %s not found", id).
			WithHint("list your keys with `boxkite ssh-keys ls`")
	}
	if err != nil {
		return fmt.Errorf("remove ssh key: %w", err)
	}
	s.d.Revoked(id) // its bastion sessions end now
	w.WriteHeader(http.StatusNoContent)
	return nil
}
