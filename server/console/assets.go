package console

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// dist is what web/ builds (web/build.mjs; committed, checked fresh in
// CI); page.html is the page every console path answers, the same for
// all: the script in dist routes on the path.
//
//go:embed dist page.html
var files embed.FS

// asset is one embedded file, with the hash that versions it and, when
// that is smaller, its gzip encoding (made once, at start).
type asset struct {
	body, gz []byte
	ctype    string
	hash     string
}

type assets struct {
	byName map[string]asset
	page   *template.Template
}

func loadAssets() (*assets, error) {
	as := &assets{byName: map[string]asset{}}
	names, err := fs.Glob(files, "dist/*")
	if err != nil {
		return nil, fmt.Errorf("list assets: %w", err)
	}
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read asset: %w", err)
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(n))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		a := asset{body: b, ctype: ctype, hash: hex.EncodeToString(sum[:8])}
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression) // the level is valid
		if _, err := zw.Write(b); err == nil && zw.Close() == nil && z.Len() < len(b) {
			a.gz = z.Bytes()
		}
		as.byName[path.Base(n)] = a
	}
	for _, need := range []string{"app.js", "app.css"} {
		if _, ok := as.byName[need]; !ok {
			return nil, fmt.Errorf("asset %s is missing: run npm run build in server/console/web", need)
		}
	}
	page, err := template.ParseFS(files, "page.html")
	if err != nil {
		return nil, fmt.Errorf("parse page: %w", err)
	}
	as.page = page
	return as, nil
}

// url is the versioned address of an asset.
func (as *assets) url(name string) string {
	return Prefix + "assets/" + name + "?v=" + as.byName[name].hash
}

// pagePolicy is the page's Content-Security-Policy: scripts, styles,
// fonts, images and connections of the console's own origin only, and
// the style elements the terminal (xterm.js) creates, which carry the
// page's nonce.
func pagePolicy(nonce string) string {
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self' 'nonce-" + nonce + "'",
		"img-src 'self' data:",
		"font-src 'self'",
		"connect-src 'self'",
		"manifest-src 'self'",
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
	}, "; ")
}

// servePage serves the console's page for every path under /ui/ that is
// not one of its own routes; the script shows what the path names.
func (c *Console) servePage(w http.ResponseWriter, r *http.Request) {
	var nb [18]byte
	_, _ = rand.Read(nb[:])
	nonce := base64.RawURLEncoding.EncodeToString(nb[:])
	var buf bytes.Buffer
	err := c.assets.page.Execute(&buf, map[string]string{
		"Nonce": nonce, "Script": c.assets.url("app.js"), "Style": c.assets.url("app.css"), "Icon": c.assets.url("icon.svg"),
	})
	if err != nil {
		c.log.ErrorContext(r.Context(), "console: render page", "err", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", pagePolicy(nonce))
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// serveAsset serves an embedded file: for ever when asked for by its
// version, else revalidated by its ETag.
func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := c.assets.byName[r.PathValue("name")]
	if !ok {
		c.writeError(w, r, errNoAsset)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", `"`+a.hash+`"`)
	if r.URL.Query().Get("v") == a.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	body := a.body
	if a.gz != nil {
		h.Set("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
			h.Set("ETag", `"`+a.hash+`-gz"`)
			body = a.gz
		}
	}
	http.ServeContent(w, r, "", zeroTime, bytes.NewReader(body))
}

// acceptsGzip reports whether r's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}

var zeroTime time.Time

var errNoAsset = api.Errorf(http.StatusNotFound, api.CodeNotFound, "no such console asset").
	WithHint("the console's page names its assets; reload /ui/ after an upgrade")
