package httpx

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Page is the page a list request asks for with ?limit= and ?cursor=
// (GET /v1/sandboxes, /v1/images, /v1/webhooks and a webhook's
// deliveries): lists are ordered newest first, by creation time and
// then id, both descending, and a cursor names the last item of the
// page before, so items created or deleted between two pages neither
// skip nor repeat another.
type Page struct {
	// Limit is the most items of the page; 0 for no limit.
	Limit int
	// AfterCreated and AfterID name the last item of the page before;
	// AfterID is "" for the first page.
	AfterCreated time.Time
	AfterID      string
}

// After reports whether an item created at created with id id comes
// after p's cursor in the list's order (true for every item when p has
// no cursor).
func (p Page) After(created time.Time, id string) bool {
	if p.AfterID == "" {
		return true
	}
	c := micros(created)
	a := micros(p.AfterCreated)
	return c < a || (c == a && id < p.AfterID)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// ParsePage reads ?limit= (1 to most; absent, def, where 0 is no limit)
// and ?cursor= (from a Link header). noun names the items in the hint:
// "sandbox". The lists without a default take up to api.MaxListLimit.
func ParsePage(q url.Values, noun string, def, most int) (Page, error) {
	p := Page{Limit: def}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > most {
			hint := fmt.Sprintf("use limit=1 to limit=%d, or no limit for every %s at once", most, noun)
			if def > 0 {
				hint = fmt.Sprintf("use limit=1 to limit=%d, or no limit for the default of %d", most, def)
			}
			return p, badPageQuery("limit", fmt.Sprintf("limit %q is not a whole number from 1 to %d", v, most),
				"not a whole number in range", hint)
		}
		p.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		at, id, ok := DecodeCursor(v)
		if !ok {
			return p, badPageQuery("cursor", "cursor is not one this server gave", "not a cursor",
				`follow the rel="next" link of the page before as it came, or leave cursor out for the first page`)
		}
		p.AfterCreated, p.AfterID = at, id
	}
	return p, nil
}

func badPageQuery(field, message, msg, hint string) *api.Error {
	return &api.Error{
		Status: http.StatusUnprocessableEntity, Code: api.CodeValidation, Message: message, Hint: hint,
		Details: []FieldError{{Loc: []string{"query", field}, Msg: msg, Type: "value_error"}},
	}
}

// EncodeCursor makes the opaque cursor of the page after the item
// created at at with id id: base64url of "MICROS.ID".
func EncodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "." + id))
}

// DecodeCursor reads EncodeCursor's cursor; ok is false for anything
// else, and for an id that is no id of ours (1 to 100 letters, digits,
// '-' and '_').
func DecodeCursor(c string) (at time.Time, id string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", false
	}
	ms, id, found := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !found || err != nil || !cursorID(id) {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}

func cursorID(id string) bool {
	if id == "" || len(id) > 100 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// SetNextLink sets w's Link header (RFC 8288, as GitHub's API and the
// registry API do) to the page after the item created at at with id id:
// r's own URL with that cursor, under publicURL when it is set, else a
// path. The query parameters named in drop are left out of it (offset,
// which the cursor replaces).
func SetNextLink(w http.ResponseWriter, r *http.Request, publicURL string, at time.Time, id string, drop ...string) {
	q := r.URL.Query()
	for _, name := range drop {
		q.Del(name)
	}
	q.Set("cursor", EncodeCursor(at, id))
	target := r.URL.EscapedPath()
	if publicURL != "" {
		target = strings.TrimRight(publicURL, "/") + target
	}
	w.Header().Set("Link", fmt.Sprintf("<%s?%s>; rel=\"next\"", target, q.Encode()))
}

// CutPage returns the page p asks for of items, a whole list ordered
// newest first (creation time, then id, descending; key gives both), and
// sets w's Link header when another page follows. It is for lists read
// whole from the store, which are short (an account's webhooks) or not
// kept in SQL (the images of a server without one).
func CutPage[T any](w http.ResponseWriter, r *http.Request, publicURL string, p Page, items []T, key func(T) (time.Time, string)) []T {
	out := make([]T, 0, min(len(items), max(p.Limit, 0)))
	for _, it := range items {
		created, id := key(it)
		if !p.After(created, id) {
			continue
		}
		if p.Limit > 0 && len(out) == p.Limit {
			last, lastID := key(out[len(out)-1])
			SetNextLink(w, r, publicURL, last, lastID)
			break
		}
		out = append(out, it)
	}
	return out
}

// SortNewestFirst is the order CutPage and the cursor need: creation
// time (to the microsecond a cursor keeps), then id, both descending.
func SortNewestFirst[T any](key func(T) (time.Time, string)) func(a, b T) int {
	return func(a, b T) int {
		ca, ia := key(a)
		cb, ib := key(b)
		if x, y := micros(ca), micros(cb); x != y {
			if x > y {
				return -1
			}
			return 1
		}
		return strings.Compare(ib, ia)
	}
}
