package sandbox

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// MaxListLimit is the most sandboxes one page of GET /v1/sandboxes holds.
const MaxListLimit = 1000

// listSandboxes serves GET /v1/sandboxes: the reference's bare array,
// everything at once, unless the client asks for pages with limit. Then
// the answer holds at most limit sandboxes and, when there may be more,
// a Link header (RFC 8288, as GitHub's API and the registry API do) whose
// rel="next" target is this request with the cursor of the next page
// (under the server's public URL when one is configured, else a path):
// the body keeps the reference's shape either way.
func (s *Service) listSandboxes(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := listPage(q)
	if err != nil {
		return err
	}
	ask := p
	if p.Limit > 0 {
		ask.Limit = p.Limit + 1 // one more says whether a next page exists
	}
	sbs, err := s.store.ListSandboxPage(r.Context(), authz.Account(r.Context()).ID, ask)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	if p.Limit > 0 && len(sbs) > p.Limit {
		sbs = sbs[:p.Limit]
		last := sbs[len(sbs)-1]
		q.Set("cursor", EncodeCursor(last.CreatedAt, last.ID))
		target := r.URL.EscapedPath()
		if s.cfg.PublicURL != "" {
			target = strings.TrimRight(s.cfg.PublicURL, "/") + target
		}
		w.Header().Set("Link", fmt.Sprintf("<%s?%s>; rel=\"next\"", target, q.Encode()))
	}
	out := make([]api.Sandbox, len(sbs))
	for i, sb := range sbs {
		out[i] = sb.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// listPage reads GET /v1/sandboxes's query: active_only, limit (1 to
// MaxListLimit; absent, no limit) and cursor (from a Link header).
func listPage(q url.Values) (model.SandboxPage, error) {
	var p model.SandboxPage
	if v := q.Get("active_only"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return p, badQuery("active_only", fmt.Sprintf("active_only %q is not a boolean", v), "not a boolean",
				"use active_only=true or active_only=false")
		}
		p.ActiveOnly = b
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			return p, badQuery("limit", fmt.Sprintf("limit %q is not a whole number from 1 to %d", v, MaxListLimit),
				"not a whole number in range", fmt.Sprintf("use limit=1 to limit=%d, or no limit for every sandbox at once", MaxListLimit))
		}
		p.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		at, id, ok := DecodeCursor(v)
		if !ok {
			return p, badQuery("cursor", "cursor is not one this server gave", "not a cursor",
				`follow the rel="next" link of the page before as it came, or leave cursor out for the first page`)
		}
		p.AfterCreated, p.AfterID = at, id
	}
	return p, nil
}

func badQuery(field, message, msg, hint string) *api.Error {
	return &api.Error{
		Status: http.StatusUnprocessableEntity, Code: api.CodeValidation, Message: message, Hint: hint,
		Details: []httpx.FieldError{{Loc: []string{"query", field}, Msg: msg, Type: "value_error"}},
	}
}

// EncodeCursor makes the opaque cursor of the page after the sandbox
// created at at with id id: base64url of "MICROS.ID".
func EncodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "." + id))
}

// DecodeCursor reads EncodeCursor's cursor; ok is false for anything else.
func DecodeCursor(c string) (at time.Time, id string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", false
	}
	ms, id, found := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !found || err != nil || !model.ValidID(id) {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}
