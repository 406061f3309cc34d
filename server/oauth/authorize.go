package oauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// sessionCookie carries the consent page's sign-in: a short-lived token
// naming the account, HttpOnly, SameSite=Lax, scoped to /oauth/.
const sessionCookie = "boxkite_oauth_session"

// authRequest is an authorization request's parameters (RFC 6749 §4.1.1,
// PKCE, RFC 8707's resource), carried through the sign-in and consent
// forms as hidden fields.
type authRequest struct {
	ResponseType, ClientID, RedirectURI, Challenge, ChallengeMethod, State, Resource, Scope string
}

func parseAuthRequest(v url.Values) authRequest {
	return authRequest{
		ResponseType: v.Get("response_type"), ClientID: v.Get("client_id"), RedirectURI: v.Get("redirect_uri"),
		Challenge: v.Get("code_challenge"), ChallengeMethod: v.Get("code_challenge_method"),
		State: v.Get("state"), Resource: v.Get("resource"), Scope: v.Get("scope"),
	}
}

// Values is the request as query parameters.
func (a authRequest) Values() url.Values {
	v := url.Values{}
	for k, val := range map[string]string{
		"response_type": a.ResponseType, "client_id": a.ClientID, "redirect_uri": a.RedirectURI,
		"code_challenge": a.Challenge, "code_challenge_method": a.ChallengeMethod,
		"state": a.State, "resource": a.Resource, "scope": a.Scope,
	} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return v
}

// pageError is an authorization request so broken that the user, not
// the client, is told (an unknown client or an unregistered redirect
// URI: redirecting there would make the server an open redirector).
type pageError struct{ msg string }

func (e *pageError) Error() string { return e.msg }

// redirectError is answered by redirecting to the client with error=.
type redirectError struct{ code, desc string }

func (e *redirectError) Error() string { return e.code + ": " + e.desc }

// check validates a against its client; it returns the client, and a
// *pageError or *redirectError (with the redirect URI now trusted).
func (s *Service) check(r *http.Request, a *authRequest) (*Client, error) {
	c, err := s.d.Store.OAuthClient(r.Context(), a.ClientID)
	if notFound(err) || a.ClientID == "" {
		return nil, &pageError{"This application is not registered with this server (unknown client_id). Connect it again from the application."}
	}
	if err != nil {
		return nil, fmt.Errorf("look up oauth client: %w", err)
	}
	if a.RedirectURI == "" && len(c.RedirectURIs) == 1 {
		a.RedirectURI = c.RedirectURIs[0]
	}
	if !c.redirectAllowed(a.RedirectURI) {
		return nil, &pageError{"The redirect_uri is not one this application registered."}
	}
	switch {
	case a.ResponseType != "code":
		return c, &redirectError{"unsupported_response_type", "only response_type=code is supported"}
	case a.Challenge == "" || a.ChallengeMethod != "S256":
		return c, &redirectError{"invalid_request", "PKCE is required: code_challenge with code_challenge_method=S256"}
	case len(a.Challenge) < 43 || len(a.Challenge) > 128:
		return c, &redirectError{"invalid_request", "code_challenge must be 43 to 128 characters"}
	case a.Resource != "" && a.Resource != s.resource(r):
		return c, &redirectError{"invalid_target", "resource must be " + s.resource(r)}
	}
	return c, nil
}

// fail answers err of check: a page for the user, or a redirect with
// error= for the client.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, a authRequest, err error) error {
	var pe *pageError
	var re *redirectError
	switch {
	case errors.As(err, &pe):
		return s.page(w, http.StatusBadRequest, pageData{Error: pe.msg})
	case errors.As(err, &re):
		s.redirectBack(w, r, a, url.Values{"error": {re.code}, "error_description": {re.desc}})
		return nil
	}
	return err
}

// redirectBack sends the user agent to the client's redirect URI with
// params, the state and the issuer (RFC 9207).
func (s *Service) redirectBack(w http.ResponseWriter, r *http.Request, a authRequest, params url.Values) {
	u, _ := url.Parse(a.RedirectURI) // checked at registration
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if a.State != "" {
		q.Set("state", a.State)
	}
	q.Set("iss", s.issuer(r))
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// refuseText answers an authorization request one of whose parameters
// (or headers) is not text, bad its checkRequestText refusal, as RFC 6749
// §4.1.2.1 has it: back to the client with error=invalid_request when
// its client_id and redirect_uri are text and registered, else a page
// for the user, never a redirect to a URI not verified. The guard's
// JSON envelope answered these before, which a browser shows as raw
// JSON. Nothing that is not text reaches the store or the redirect.
func (s *Service) refuseText(w http.ResponseWriter, r *http.Request, a authRequest, bad *Error) error {
	page := pageData{Error: "This authorization request cannot be read: " + bad.Description + ". Start again from the application."}
	if !isText(a.ClientID) || !isText(a.RedirectURI) {
		return s.page(w, http.StatusBadRequest, page)
	}
	_, err := s.check(r, &a)
	var pe *pageError
	var re *redirectError
	switch {
	case errors.As(err, &pe):
		return s.page(w, http.StatusBadRequest, page)
	case err != nil && !errors.As(err, &re):
		return err
	}
	if !isText(a.State) {
		a.State = "" // not echoed back as it came
	}
	s.redirectBack(w, r, a, url.Values{"error": {bad.Code}, "error_description": {bad.Description}})
	return nil
}

// isText reports whether v can be a parameter's text: UTF-8 without NUL.
func isText(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsRune(v, 0)
}

// authorize serves GET /oauth/authorize: the sign-in form, or, with a
// signed-in session, the consent form.
func (s *Service) authorize(w http.ResponseWriter, r *http.Request) error {
	a := parseAuthRequest(r.URL.Query())
	if bad := checkRequestText(r); bad != nil {
		return s.refuseText(w, r, a, bad)
	}
	c, err := s.check(r, &a)
	if err != nil {
		return s.fail(w, r, a, err)
	}
	acct, cookie := s.session(r)
	if acct == nil {
		return s.page(w, http.StatusOK, pageData{Client: c, Request: a})
	}
	return s.page(w, http.StatusOK, pageData{Client: c, Request: a, Account: acct, CSRF: s.csrf(r, cookie)})
}

// form reads and checks the authorization request a POST of the pages
// carries; when ok is false the answer is written and err is the
// handler's to return.
func (s *Service) form(w http.ResponseWriter, r *http.Request) (a authRequest, c *Client, ok bool, err error) {
	if err := r.ParseForm(); err != nil {
		return a, nil, false, s.page(w, http.StatusBadRequest, pageData{Error: "The form could not be read."})
	}
	a = parseAuthRequest(r.PostForm)
	if bad := checkRequestText(r); bad != nil {
		return a, nil, false, s.refuseText(w, r, a, bad)
	}
	if c, err = s.check(r, &a); err != nil {
		return a, nil, false, s.fail(w, r, a, err)
	}
	return a, c, true, nil
}

// login serves POST /oauth/authorize/login: the account's email and
// password, then back to the consent form with a session cookie.
func (s *Service) login(w http.ResponseWriter, r *http.Request) error {
	a, c, ok, err := s.form(w, r)
	if !ok {
		return err
	}
	acct, err := s.d.Login(w, r, r.PostForm.Get("email"), r.PostForm.Get("password"))
	if err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) {
			return err
		}
		return s.page(w, ae.Status, pageData{Client: c, Request: a, Error: ae.Message})
	}
	key, err := s.key(r.Context())
	if err != nil {
		return err
	}
	tok, err := s.signSession(key, acct)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: tok, Path: "/oauth/", MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, "/oauth/authorize?"+a.Values().Encode(), http.StatusSeeOther)
	return nil
}

// decide serves POST /oauth/authorize/decide: the signed-in user approves
// (an authorization code goes back to the client) or denies.
func (s *Service) decide(w http.ResponseWriter, r *http.Request) error {
	a, c, ok, err := s.form(w, r)
	if !ok {
		return err
	}
	acct, cookie := s.session(r)
	if acct == nil {
		return s.page(w, http.StatusUnauthorized, pageData{Client: c, Request: a, Error: "Your sign-in expired; sign in again."})
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf(r, cookie))) != 1 {
		return s.page(w, http.StatusForbidden, pageData{Error: "The form is stale or was not sent by this page; start again from the application."})
	}
	if r.PostForm.Get("decision") != "approve" {
		s.redirectBack(w, r, a, url.Values{"error": {"access_denied"}, "error_description": {"the user denied access"}})
		return nil
	}
	code := randomToken()
	now := s.d.Now()
	resource := a.Resource
	if resource == "" {
		resource = s.resource(r)
	}
	if err := s.d.Store.CreateOAuthCode(r.Context(), &Code{
		Hash: hashToken(code), ClientID: c.ID, AccountID: acct.ID, RedirectURI: a.RedirectURI,
		Challenge: a.Challenge, Resource: resource, CreatedAt: now, ExpiresAt: now.Add(CodeTTL),
	}); err != nil {
		return fmt.Errorf("store authorization code: %w", err)
	}
	s.d.Log.InfoContext(r.Context(), "oauth access approved", "account", acct.ID, "client", c.ID)
	s.redirectBack(w, r, a, url.Values{"code": {code}})
	return nil
}

// session returns the signed-in account of r's session cookie, and the
// cookie's value; nil when there is none or it is not valid.
func (s *Service) session(r *http.Request) (*model.Account, string) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, ""
	}
	key, err := s.key(r.Context())
	if err != nil {
		return nil, ""
	}
	id, err := s.parseSession(key, ck.Value)
	if err != nil {
		return nil, ""
	}
	acct, err := s.d.Account(r.Context(), id)
	if err != nil {
		return nil, ""
	}
	return acct, ck.Value
}

// csrf is the consent form's token: bound to the session cookie, so a
// page elsewhere cannot post a decision.
func (s *Service) csrf(r *http.Request, cookie string) string {
	key, err := s.key(r.Context())
	if err != nil || cookie == "" {
		return ""
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("csrf\x00" + cookie))
	return hex.EncodeToString(m.Sum(nil))
}

// pageData is what the authorization page shows.
type pageData struct {
	Client  *Client
	Request authRequest
	Account *model.Account // signed in: the consent form
	CSRF    string
	Error   string
}

// Hidden is the request's parameters as the forms' hidden fields.
func (p pageData) Hidden() url.Values { return p.Request.Values() }

var pageTemplate = template.Must(template.New("authorize").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>boxkite — authorize</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}
.err{color:#a00}label{display:block;margin:.6rem 0}input[type=email],input[type=password]{width:100%}
button{margin:.6rem .4rem 0 0;padding:.4rem 1rem}</style></head><body>
<h1>boxkite</h1>
{{if .Error}}<p class="err" role="alert">{{.Error}}</p>{{end}}
{{if .Client}}
{{if .Account}}
<p><strong>{{if .Client.Name}}{{.Client.Name}}{{else}}An application{{end}}</strong> wants to use boxkite's MCP tools as
<strong>{{.Account.Email}}</strong>: create and run sandboxes in this account.</p>
<p>It will be sent to <code>{{.Request.RedirectURI}}</code>.</p>
<form method="post" action="/oauth/authorize/decide">
{{range $k, $v := .Hidden}}<input type="hidden" name="{{$k}}" value="{{index $v 0}}">{{end}}
<input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
{{else}}
<p>Sign in to let <strong>{{if .Client.Name}}{{.Client.Name}}{{else}}an application{{end}}</strong> use your boxkite account.</p>
<form method="post" action="/oauth/authorize/login">
{{range $k, $v := .Hidden}}<input type="hidden" name="{{$k}}" value="{{index $v 0}}">{{end}}
<label>Email <input type="email" name="email" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
{{end}}
{{end}}
</body></html>
`))

// page renders the authorization page; it may not be framed.
func (s *Service) page(w http.ResponseWriter, status int, p pageData) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	if err := pageTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("render authorization page: %w", err)
	}
	return nil
}
