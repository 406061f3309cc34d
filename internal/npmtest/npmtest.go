// Package npmtest serves npm packages to tests from a registry on
// loopback, so that no test's npm reaches the real registry. An npm
// registry is JSON metadata (a "packument" per package name) and
// tarballs; Registry builds the metadata from the tarballs it is given:
// the fixtures .ci/run fetched with `npm pack` into
// $HOME/.cache/boxkite-npm-fixtures (Fixtures), and packages a test makes
// itself (Pack).
package npmtest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/semver"
)

// FixturesEnv names the directory of fetched tarballs (.ci/run sets it).
const FixturesEnv = "BOXKITE_TEST_NPM_FIXTURES"

// Fixtures returns the directory of tarballs .ci/run fetched, after
// checking it holds a tarball for each of specs ("name@version" or
// "@scope/name@version"). Without them the test fails under CI and is
// skipped elsewhere, saying how to fetch them.
func Fixtures(t testing.TB, specs ...string) string {
	t.Helper()
	dir := os.Getenv(FixturesEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(home, ".cache", "boxkite-npm-fixtures")
	}
	for _, s := range specs {
		if _, err := os.Stat(filepath.Join(dir, PackFile(s))); err != nil {
			msg := fmt.Sprintf("npm fixture %s missing from %s (.ci/run fetches it with npm pack)", s, dir)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return dir
}

// PackFile is the file name `npm pack` gives the tarball of spec
// ("name@version" or "@scope/name@version"): scope-name-version.tgz.
func PackFile(spec string) string {
	s := strings.TrimPrefix(spec, "@")
	s = strings.Replace(s, "/", "-", 1)
	at := strings.LastIndex(s, "@")
	if at > 0 {
		s = s[:at] + "-" + s[at+1:]
	}
	return s + ".tgz"
}

// Registry is an npm registry on loopback. Metadata and tarball URLs name
// the host the client asked for (its Host header), so it can be reached
// under any name a test resolves to it, through a proxy or not.
//
// Packages of directories added with AddDir are read when a client first
// asks for their name, and served from disk: a directory may hold
// hundreds of megabytes of packages a test never installs.
type Registry struct {
	Server *httptest.Server

	mu       sync.Mutex
	packages map[string]map[string]*pkgVersion // name → version → package
	dirs     []string                          // AddDir's, read on demand
	files    map[string]*pkgFile               // their tarballs, by path
	fetched  map[string]int                    // tarball requests, by name@version
}

type pkgVersion struct {
	manifest        map[string]any // package.json
	tarball         []byte         // in memory (Add), or
	file            string         // on disk (AddDir)
	sha1, integrity string
}

// pkgFile is a tarball of an AddDir directory, read once.
type pkgFile struct {
	once sync.Once
	pkg  *pkgVersion
	err  error
}

// New starts an empty registry, closed when the test ends.
func New(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{packages: map[string]map[string]*pkgVersion{}, files: map[string]*pkgFile{}, fetched: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Server.Close)
	return r
}

// AddDir serves the .tgz files of dir (as `npm pack` names them:
// scope-name-version.tgz), each read when its name is first asked for.
func (r *Registry) AddDir(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("npmtest: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dirs = append(r.dirs, dir)
}

// Add serves the package tarball tgz under the name and version its
// package.json gives.
func (r *Registry) Add(t testing.TB, tgz []byte) {
	t.Helper()
	p, err := newPkg(bytes.NewReader(tgz), tgz, "")
	if err != nil {
		t.Fatalf("npmtest: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.register(p)
}

// newPkg reads a tarball's package.json and digests: from body, which is
// tgz when it is in memory, else the file at path.
func newPkg(body io.Reader, tgz []byte, path string) (*pkgVersion, error) {
	h1, h512 := sha1.New(), sha512.New()
	manifest, err := readManifest(io.TeeReader(body, io.MultiWriter(h1, h512)))
	if err != nil {
		return nil, err
	}
	// The digests cover the whole file, past package.json.
	if _, err := io.Copy(io.MultiWriter(h1, h512), body); err != nil {
		return nil, fmt.Errorf("read package: %w", err)
	}
	name, _ := manifest["name"].(string)
	version, _ := manifest["version"].(string)
	if name == "" || version == "" {
		return nil, fmt.Errorf("a package.json without name or version: %v", manifest)
	}
	return &pkgVersion{
		manifest: manifest, tarball: tgz, file: path,
		sha1: hex.EncodeToString(h1.Sum(nil)), integrity: "sha512-" + base64.StdEncoding.EncodeToString(h512.Sum(nil)),
	}, nil
}

// register adds p; r.mu held.
func (r *Registry) register(p *pkgVersion) {
	name, version := p.manifest["name"].(string), p.manifest["version"].(string)
	if r.packages[name] == nil {
		r.packages[name] = map[string]*pkgVersion{}
	}
	r.packages[name][version] = p
}

// lookup returns the versions of name, reading first the AddDir
// tarballs whose file name could be one of them (in parallel, and each
// once: a big one takes seconds).
func (r *Registry) lookup(name string) (map[string]*pkgVersion, error) {
	prefix := strings.TrimSuffix(PackFile(name+"@0"), "0.tgz")
	type todo struct {
		path string
		f    *pkgFile
	}
	var files []todo
	r.mu.Lock()
	for _, dir := range r.dirs {
		matches, _ := filepath.Glob(filepath.Join(dir, prefix+"*.tgz"))
		for _, m := range matches {
			// The rest must be a version: "cowsay-" also starts
			// "cowsay-plus-1.0.0.tgz".
			v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), prefix), ".tgz")
			if !semver.IsValid("v" + v) {
				continue
			}
			f, ok := r.files[m]
			if !ok {
				f = &pkgFile{}
				r.files[m] = f
			}
			files = append(files, todo{m, f})
		}
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, td := range files {
		wg.Go(func() {
			td.f.once.Do(func() {
				f, err := os.Open(td.path)
				if err != nil {
					td.f.err = err
					return
				}
				defer f.Close()
				td.f.pkg, td.f.err = newPkg(bufio.NewReader(f), nil, td.path)
			})
		})
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, td := range files {
		if td.f.err != nil {
			return nil, fmt.Errorf("%s: %w", td.path, td.f.err)
		}
		if n, _ := td.f.pkg.manifest["name"].(string); n == name {
			r.register(td.f.pkg)
		}
	}
	return maps.Clone(r.packages[name]), nil
}

// Fetched reports how often the tarball of name@version was downloaded.
func (r *Registry) Fetched(nameAtVersion string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetched[nameAtVersion]
}

// Port is the registry's port on 127.0.0.1.
func (r *Registry) Port() string {
	u, _ := url.Parse(r.Server.URL)
	return u.Port()
}

// serve answers GET /NAME (the packument; a scoped name's slash may come
// as %2f) and GET /NAME/-/FILE.tgz (a tarball).
func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
		return
	}
	path, err := url.PathUnescape(req.URL.EscapedPath())
	if err != nil {
		http.NotFound(w, req)
		return
	}
	path = strings.TrimPrefix(path, "/")
	name, file, isTarball := strings.Cut(path, "/-/")
	versions, err := r.lookup(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if len(versions) == 0 {
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		return
	}
	if isTarball {
		for v, p := range versions {
			if file == tarballName(name, v) {
				r.mu.Lock()
				r.fetched[name+"@"+v]++
				r.mu.Unlock()
				w.Header().Set("Content-Type", "application/octet-stream")
				if p.file != "" {
					http.ServeFile(w, req, p.file)
					return
				}
				_, _ = w.Write(p.tarball)
				return
			}
		}
		http.NotFound(w, req)
		return
	}
	doc := map[string]any{"name": name, "versions": packument(req.Host, name, versions)}
	var all []string
	for v := range versions {
		all = append(all, v)
	}
	sort.Slice(all, func(i, j int) bool { return semver.Compare("v"+all[i], "v"+all[j]) < 0 })
	doc["dist-tags"] = map[string]string{"latest": all[len(all)-1]}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

// packument returns each version's package.json with where to fetch its
// tarball and the digests npm checks it against.
func packument(host, name string, versions map[string]*pkgVersion) map[string]any {
	out := map[string]any{}
	for v, p := range versions {
		m := maps.Clone(p.manifest)
		m["_id"] = name + "@" + v
		m["dist"] = map[string]any{
			"tarball":   "http://" + host + "/" + name + "/-/" + tarballName(name, v),
			"shasum":    p.sha1,
			"integrity": p.integrity,
		}
		out[v] = m
	}
	return out
}

// tarballName is a version's file in the registry's URL scheme.
func tarballName(name, version string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name + "-" + version + ".tgz"
}

// readManifest returns package/package.json of a package tarball,
// reading no further.
func readManifest(tgz io.Reader) (map[string]any, error) {
	zr, err := gzip.NewReader(tgz)
	if err != nil {
		return nil, fmt.Errorf("read package: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("read package: no package.json")
		}
		if err != nil {
			return nil, fmt.Errorf("read package: %w", err)
		}
		// npm pack names the top directory package/; some old tarballs
		// use another name.
		if _, rest, ok := strings.Cut(h.Name, "/"); !ok || rest != "package.json" {
			continue
		}
		var m map[string]any
		if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
			return nil, fmt.Errorf("read package.json: %w", err)
		}
		return m, nil
	}
}

// Pack makes a package tarball as `npm pack` would: files (path → content)
// under package/, package.json among them.
func Pack(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		mode := int64(0o644)
		if strings.HasPrefix(files[n], "#!") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + n, Mode: mode, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
