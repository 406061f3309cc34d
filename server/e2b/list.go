package e2b

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envd"
	"github.com/boxkite/boxkite/server/model"
)

// listedJSON is E2B's ListedSandbox.
type listedJSON struct {
	SandboxID   string            `json:"sandboxID"`
	TemplateID  string            `json:"templateID"`
	ClientID    string            `json:"clientID"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int               `json:"memoryMB"`
	DiskSizeMB  int               `json:"diskSizeMB"`
	EnvdVersion string            `json:"envdVersion"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	State       string            `json:"state"`
	Metadata    map[string]string `json:"metadata"`
}

func listed(sb Sandbox, rec Record) listedJSON {
	size := sizes[sb.Size]
	md := rec.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return listedJSON{
		SandboxID: sb.ID, TemplateID: rec.TemplateID, ClientID: clientID, CPUCount: size[0], MemoryMB: size[1],
		DiskSizeMB: int(sb.StorageGB * 1024), EnvdVersion: envd.Version, StartedAt: sb.CreatedAt.UTC(),
		EndAt: sb.ExpiresAt.UTC(), State: state(sb), Metadata: md,
	}
}

// list serves GET /v2/sandboxes: the account's running and paused
// sandboxes (state= picks one), filtered by metadata, template and start
// time, newest first unless order=asc, a page of limit at a time.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, c Caller) error {
	f, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	sbs, err := h.cp.Sandboxes(r.Context(), c)
	if err != nil {
		return err
	}
	recs, err := h.store.E2BSandboxes(r.Context(), c.AccountID())
	if err != nil {
		return err
	}
	byID := map[string]Record{}
	for _, rec := range recs {
		byID[rec.SandboxID] = rec
	}
	var out []listedJSON
	for _, sb := range sbs {
		rec, ok := byID[sb.ID]
		if !ok {
			rec = Record{SandboxID: sb.ID, TemplateID: defaultTemplate}
		}
		if f.match(sb, rec) {
			out = append(out, listed(sb, rec))
		}
	}
	slices.SortFunc(out, func(a, b listedJSON) int {
		if d := a.StartedAt.Compare(b.StartedAt); d != 0 {
			return d
		}
		return strings.Compare(a.SandboxID, b.SandboxID)
	})
	if !f.asc {
		slices.Reverse(out)
	}
	if f.after != "" {
		i := slices.IndexFunc(out, func(l listedJSON) bool { return l.SandboxID == f.after })
		out = out[i+1:] // -1 (a token of a sandbox gone since) starts over
	}
	if len(out) > f.limit {
		out = out[:f.limit]
		w.Header().Set("X-Next-Token", base64.RawURLEncoding.EncodeToString([]byte(out[len(out)-1].SandboxID)))
	}
	if out == nil {
		out = []listedJSON{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listFilter is the query of a list.
type listFilter struct {
	metadata     map[string]string
	running      bool
	paused       bool
	template     string
	startedAfter time.Time
	asc          bool
	limit        int
	after        string // the sandbox id the page starts after
}

// parseListQuery parses the list's query string. A query string that is
// not percent-encoded correctly is refused: r.URL.Query() drops such a
// parameter, so metadata=%zz listed every sandbox, unfiltered.
func parseListQuery(raw string) (listFilter, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return listFilter{}, badQuery("query", "the query string is not percent-encoded correctly", "")
	}
	return parseListFilter(q)
}

func parseListFilter(q url.Values) (listFilter, error) {
	f := listFilter{metadata: map[string]string{}, running: true, paused: true, template: q.Get("template"), limit: defaultPageLimit}
	if v := q.Get("metadata"); v != "" {
		// The SDK encodes each key and value, joins them as a query
		// string, and sends that, encoded again, as one parameter.
		pairs, err := url.ParseQuery(v)
		if err != nil {
			return f, badQuery("metadata", "metadata is not a query string of key=value pairs", "")
		}
		for k, vs := range pairs {
			key, err1 := url.QueryUnescape(k)
			val, err2 := url.QueryUnescape(vs[0])
			if err1 != nil || err2 != nil {
				return f, badQuery("metadata", "metadata is not percent-encoded correctly", "")
			}
			f.metadata[key] = val
		}
	}
	if v := q.Get("state"); v != "" {
		states := strings.Split(v, ",")
		for _, st := range states {
			if st != "running" && st != "paused" {
				return f, badQuery("state", "state must be running, paused or both (running,paused)", "")
			}
		}
		f.running, f.paused = slices.Contains(states, "running"), slices.Contains(states, "paused")
	}
	if v := q.Get("startedAfter"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, badQuery("startedAfter", "startedAfter is not an RFC 3339 time", "")
		}
		f.startedAfter = t
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		f.asc = true
	default:
		return f, badQuery("order", "order must be asc or desc", "")
	}
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		return f, err
	}
	f.limit = limit
	if v := q.Get("nextToken"); v != "" {
		after, err := pageAfter(v)
		if err != nil {
			return f, err
		}
		f.after = after
	}
	return f, nil
}

// pageAfter returns the id a nextToken names: X-Next-Token is base64url of
// the last sandbox's (or snapshot's) id of the page before. A token that
// is not one of those is refused 400: "garbage" is valid base64url, and
// read as an id no page has, it started the list over from the first page.
func pageAfter(token string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !model.ValidID(string(b)) {
		return "", badQuery("nextToken", "nextToken is not one this server gave",
			"send the X-Next-Token header of the previous page as it came, or no nextToken for the first page")
	}
	return string(b), nil
}

// pageLimit reads a list's limit: 1 to 100, 100 when absent. E2B's
// OpenAPI spec (paginationLimit) has minimum 1 and maximum 100, and its
// request validator refuses any other value with a 400.
func pageLimit(v string) (int, error) {
	if v == "" {
		return defaultPageLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPageLimit {
		return 0, badQuery("limit", "limit must be an integer from 1 to 100", "")
	}
	return n, nil
}

// badQuery refuses a list's query parameter with a 400, as E2B's API does
// (its OpenAPI request validator answers 400 for a value out of the spec,
// and its handler 400 for metadata it cannot parse), not the 422 of /v1.
func badQuery(field, msg, hint string) *api.Error {
	return &api.Error{
		Status: http.StatusBadRequest, Code: api.CodeBadRequest, Message: msg, Hint: hint,
		Details: []api.FieldError{{Loc: []string{"query", field}, Msg: msg, Type: "value_error"}},
	}
}

func (f listFilter) match(sb Sandbox, rec Record) bool {
	if sb.Paused && !f.paused || !sb.Paused && !f.running || f.template != "" && f.template != rec.TemplateID || sb.CreatedAt.Before(f.startedAfter) {
		return false
	}
	for k, v := range f.metadata {
		if got, ok := rec.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}
