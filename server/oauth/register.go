package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

const (
	grantAuthorizationCode = "authorization_code"
	grantRefreshToken      = "refresh_token"
	maxRedirectURIs        = 10
	maxRedirectURILen      = 2000
	maxClientNameLen       = 200
)

// RegistrationRequest is a client's metadata (RFC 7591 §2); what boxkite
// does not use is accepted and ignored.
type RegistrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// RegistrationResponse is the registered client (RFC 7591 §3.2.1), with
// the token and URI that delete it (RFC 7592).
type RegistrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	RegistrationAccessToken string   `json:"registration_access_token"`
	RegistrationClientURI   string   `json:"registration_client_uri"`
}

func errInvalidClientMetadata(desc string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_client_metadata", Description: desc}
}

// register serves POST /oauth/register: public clients only, each
// redirect URI https or loopback http.
func (s *Service) register(w http.ResponseWriter, r *http.Request) error {
	return answer(w, s.registerOAuth(w, r))
}

// registerOAuth is register's work, its OAuth errors returned.
func (s *Service) registerOAuth(w http.ResponseWriter, r *http.Request) error {
	if e := checkRequestText(r); e != nil {
		return e
	}
	var req RegistrationRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, httpx.MaxSmallBody)).Decode(&req); err != nil {
		return errInvalidClientMetadata("the body is not a JSON client metadata object")
	}
	if ae, ok := errors.AsType[*api.Error](httpx.CheckText(&req)); ok { // a NUL, which no stored text holds
		return errInvalidClientMetadata(ae.Message)
	}
	if err := checkRegistration(&req); err != nil {
		return err
	}
	now := s.d.Now()
	regToken := randomToken()
	c := &Client{
		ID: ClientIDPrefix + randomToken(), Name: req.ClientName, RedirectURIs: req.RedirectURIs,
		RegistrationHash: hashToken(regToken), CreatedAt: now,
	}
	if err := s.d.Store.CreateOAuthClient(r.Context(), c); err != nil {
		return fmt.Errorf("store oauth client: %w", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, RegistrationResponse{
		ClientID: c.ID, ClientIDIssuedAt: now.Unix(), ClientName: c.Name, RedirectURIs: c.RedirectURIs,
		TokenEndpointAuthMethod: "none", GrantTypes: []string{grantAuthorizationCode, grantRefreshToken}, ResponseTypes: []string{"code"},
		RegistrationAccessToken: regToken, RegistrationClientURI: s.issuer(r) + "/oauth/register/" + c.ID,
	})
	return nil
}

// checkRegistration refuses what a public client of this server cannot be.
func checkRegistration(req *RegistrationRequest) *Error {
	switch {
	case len(req.RedirectURIs) == 0:
		return &Error{Status: http.StatusBadRequest, Code: "invalid_redirect_uri", Description: "redirect_uris is required"}
	case len(req.RedirectURIs) > maxRedirectURIs:
		return &Error{Status: http.StatusBadRequest, Code: "invalid_redirect_uri", Description: fmt.Sprintf("at most %d redirect_uris", maxRedirectURIs)}
	case len(req.ClientName) > maxClientNameLen:
		return errInvalidClientMetadata(fmt.Sprintf("client_name is longer than %d bytes", maxClientNameLen))
	case req.TokenEndpointAuthMethod != "" && req.TokenEndpointAuthMethod != "none":
		return errInvalidClientMetadata("only public clients are registered: token_endpoint_auth_method must be \"none\"")
	}
	for _, g := range req.GrantTypes {
		if g != grantAuthorizationCode && g != grantRefreshToken {
			return errInvalidClientMetadata(fmt.Sprintf("grant type %q is not supported (authorization_code and refresh_token are)", g))
		}
	}
	for _, rt := range req.ResponseTypes {
		if rt != "code" {
			return errInvalidClientMetadata(fmt.Sprintf("response type %q is not supported (code is)", rt))
		}
	}
	for _, u := range req.RedirectURIs {
		if err := CheckRedirectURI(u); err != nil {
			return &Error{Status: http.StatusBadRequest, Code: "invalid_redirect_uri", Description: err.Error()}
		}
	}
	return nil
}

// CheckRedirectURI accepts an absolute https URI, or an http URI on a
// loopback host (127.0.0.1, [::1], localhost; any port), without a
// fragment or credentials (OAuth 2.1 §2.3.1, RFC 8252 §7.3).
func CheckRedirectURI(raw string) error {
	if len(raw) > maxRedirectURILen {
		return fmt.Errorf("redirect URI longer than %d bytes", maxRedirectURILen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("redirect URI %q is not a URL", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("redirect URI %q has a fragment", raw)
	case u.User != nil:
		return fmt.Errorf("redirect URI %q carries credentials", raw)
	case u.Host == "" || u.Opaque != "":
		return fmt.Errorf("redirect URI %q is not absolute", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("redirect URI %q must be https, or http on a loopback address (127.0.0.1, [::1], localhost)", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// deleteClient serves DELETE /oauth/register/{client_id} (RFC 7592 §2.3):
// with the registration access token, the client and every grant it
// holds are deleted.
func (s *Service) deleteClient(w http.ResponseWriter, r *http.Request) error {
	return answer(w, s.deleteClientOAuth(w, r))
}

// deleteClientOAuth is deleteClient's work.
func (s *Service) deleteClientOAuth(w http.ResponseWriter, r *http.Request) error {
	if e := checkRequestText(r); e != nil {
		return e
	}
	ctx := r.Context()
	tok, err := httpx.BearerToken(r)
	if err != nil {
		return &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Description: "send the registration_access_token as Authorization: Bearer"}
	}
	c, err := s.d.Store.OAuthClient(ctx, r.PathValue("client_id"))
	if notFound(err) {
		return &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Description: "unknown client or wrong registration access token"}
	}
	if err != nil {
		return fmt.Errorf("look up oauth client: %w", err)
	}
	if !equalHash(c.RegistrationHash, hashToken(tok)) {
		return &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Description: "unknown client or wrong registration access token"}
	}
	if err := s.d.Store.DeleteOAuthClient(ctx, c.ID); err != nil && !notFound(err) {
		return fmt.Errorf("delete oauth client: %w", err)
	}
	s.d.Log.InfoContext(ctx, "oauth client deleted", "client", c.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// redirectAllowed reports whether uri is one the client registered,
// compared exactly (OAuth 2.1 §4.1.1).
func (c *Client) redirectAllowed(uri string) bool { return slices.Contains(c.RedirectURIs, uri) }

// expired reports whether t is at or before now.
func expired(t, now time.Time) bool { return !now.Before(t) }
