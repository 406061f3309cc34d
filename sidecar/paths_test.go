package sidecar

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tree is a relocated set of typed roots laid out as in the jail under one
// temp dir, next to a directory outside every root, with symlinks planted
// in the workspace that try to lead out.
type tree struct {
	base, ws, tmp, outputs, uploads, skills, outside string
}

func (tr tree) roots() Roots {
	return Roots{Workspace: tr.ws, Tmp: tr.tmp, Outputs: tr.outputs, Uploads: tr.uploads, Skills: tr.skills}
}

func (tr tree) handler() *Handler {
	return New(Options{Roots: tr.roots()})
}

// resolution is what a test sees of a resolved path.
type resolution struct {
	virt, host string
	readOnly   bool
	held       string // where the kernel says the descriptor the target hangs on is
}

// resolveForTest resolves p as a route would.
func resolveForTest(t testing.TB, h *Handler, p string, listing bool) (resolution, error) {
	t.Helper()
	v, err := h.openView()
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	tg, err := v.resolve(p, listing)
	if err != nil {
		return resolution{}, err
	}
	defer tg.close()
	held, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(tg.cur.dir()))
	if err != nil {
		t.Fatal(err)
	}
	return resolution{virt: tg.virt(), host: tg.host(), readOnly: tg.topRoot().readOnly, held: held}, nil
}

// plantTree builds the tree; every path in it is resolved.
func plantTree(t testing.TB) tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{
		base:    base,
		ws:      base + "/workspace",
		tmp:     base + "/tmp",
		outputs: base + "/mnt/user-data/outputs",
		uploads: base + "/mnt/user-data/uploads",
		skills:  base + "/mnt/skills",
		outside: base + "/outside",
	}
	for _, dir := range []string{tr.ws + "/sub/deep", tr.ws + "/sub2", tr.tmp, tr.outputs, tr.uploads, tr.skills + "/s", tr.outside} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		tr.ws + "/file":                "workspace file\n",
		tr.uploads + "/in.txt":         "uploaded\n",
		tr.skills + "/s/SKILL.md":      "skill\n",
		tr.outside + "/secret.txt":     "secret\n",
		tr.base + "/mnt/not-a-root.md": "beside the roots\n",
	} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"root":        "/",
		"up":          "..",
		"etc":         "/etc",
		"outside":     tr.outside,
		"secret":      tr.outside + "/secret.txt",
		"totmp":       tr.tmp,
		"toskills":    tr.skills,
		"loop":        "loop",
		"dangle":      "/nonexistent-boxkite-dir/x",
		"dangle-in":   "sub/nonexistent/x",
		"rel":         "sub",
		"sub/back":    "../..",
		"sub/in":      "deep",
		"sub/hop":     "../root",
		"sub/escape":  "../../outside",
		"sub/fileref": "../file",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(tr.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func TestVirtual(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "/workspace"},
		{".", "/workspace"},
		{"/", "/workspace"},
		{"//", "/workspace"},
		{"workspace", "/workspace"},
		{"workspace/a", "/workspace/a"},
		{"./workspace/a/", "/workspace/a"},
		{"a/b", "/workspace/a/b"},
		{"a\\b", "/workspace/a/b"},
		{"\\workspace\\x", "/workspace/x"},
		{"../x", "/x"},
		{"a/../../b", "/b"},
		{"/uploads", "/mnt/user-data/uploads"},
		{"/uploads/f", "/mnt/user-data/uploads/f"},
		{"/uploadsx", "/uploadsx"},
		{"/outputs/../x", "/x"},
		{"/skills/s", "/mnt/skills/s"},
		{"/tmp/../workspace/./y", "/workspace/y"},
	}
	for _, tt := range tests {
		if got := virtual(tt.in); got != tt.want {
			t.Errorf("virtual(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tr := plantTree(t)
	h := tr.handler()
	tests := []struct {
		in       string
		listing  bool
		wantVirt string // "" means refused
		wantHost string
		readOnly bool
	}{
		{in: "", wantVirt: "/workspace", wantHost: tr.ws},
		{in: "/", wantVirt: "/workspace", wantHost: tr.ws},
		{in: "sub", wantVirt: "/workspace/sub", wantHost: tr.ws + "/sub"},
		{in: "./sub/deep/", wantVirt: "/workspace/sub/deep", wantHost: tr.ws + "/sub/deep"},
		{in: "/workspace/sub/../sub2", wantVirt: "/workspace/sub2", wantHost: tr.ws + "/sub2"},
		{in: "rel/deep", wantVirt: "/workspace/sub/deep", wantHost: tr.ws + "/sub/deep"},
		{in: "sub/in", wantVirt: "/workspace/sub/deep", wantHost: tr.ws + "/sub/deep"},
		{in: "sub/fileref", wantVirt: "/workspace/file", wantHost: tr.ws + "/file"},
		{in: "new/dirs/file.txt", wantVirt: "/workspace/new/dirs/file.txt", wantHost: tr.ws + "/new/dirs/file.txt"},
		{in: "/tmp/x", wantVirt: "/tmp/x", wantHost: tr.tmp + "/x"},
		{in: "totmp/x", wantVirt: "/tmp/x", wantHost: tr.tmp + "/x"},
		{in: "root" + tr.tmp + "/x", wantVirt: "/tmp/x", wantHost: tr.tmp + "/x"}, // through / by name, opening nothing outside
		{in: "root" + tr.tmp + "/../tmp/x", wantVirt: "/tmp/x", wantHost: tr.tmp + "/x"},
		{in: "/outputs/a", wantVirt: "/mnt/user-data/outputs/a", wantHost: tr.outputs + "/a"},
		{in: "/mnt/user-data/outputs", wantVirt: "/mnt/user-data/outputs", wantHost: tr.outputs},
		{in: "/uploads/in.txt", wantVirt: "/mnt/user-data/uploads/in.txt", wantHost: tr.uploads + "/in.txt", readOnly: true},
		{in: "/skills", wantVirt: "/mnt/skills", wantHost: tr.skills, readOnly: true},
		{in: "toskills/s", wantVirt: "/mnt/skills/s", wantHost: tr.skills + "/s", readOnly: true},
		{in: "/mnt", listing: true, wantVirt: "/mnt", wantHost: tr.base + "/mnt", readOnly: true},
		{in: "/mnt/user-data", listing: true, wantVirt: "/mnt/user-data", wantHost: tr.base + "/mnt/user-data", readOnly: true},
		{in: "/mnt"},
		{in: "/mnt/user-data"},
		{in: "/mnt/not-a-root.md", listing: true},
		{in: "/mnt/user-data/x", listing: true},
		{in: ".."},
		{in: "../.."},
		{in: "../../../../etc/passwd"},
		{in: "/etc"},
		{in: "/etc/passwd"},
		{in: "root"},
		{in: "root/etc"},
		{in: "etc"},
		{in: "etc/new"},
		{in: "outside"},
		{in: "outside/new"},
		{in: "secret"},
		{in: "up"},
		{in: "up/outside/secret.txt"},
		{in: "sub/back"},
		{in: "sub/hop/etc"},
		{in: "sub/escape/secret.txt"},
		{in: "loop"},
		{in: "loop/x"},
		{in: "dangle"},
		{in: "dangle/below"},
		{in: "dangle-in"},
		{in: "dangle-in/below"},
		{in: "file/x"},
		{in: "a\x00b"},
	}
	for _, tt := range tests {
		got, err := resolveForTest(t, h, tt.in, tt.listing)
		if tt.wantVirt == "" {
			if err == nil {
				t.Errorf("resolve(%q, %v) = %+v, want refused", tt.in, tt.listing, got)
			}
			continue
		}
		if err != nil || got.virt != tt.wantVirt || got.host != tt.wantHost || got.readOnly != tt.readOnly {
			t.Errorf("resolve(%q, %v) = %+v, %v; want virt %q host %q read-only %v", tt.in, tt.listing, got, err, tt.wantVirt, tt.wantHost, tt.readOnly)
		}
	}
}

func TestResolveAllowsTmp(t *testing.T) {
	t.Parallel()
	h := New(Options{Workspace: t.TempDir()})
	got, err := h.resolve("/tmp/")
	if err != nil || got.host != "/tmp" || !got.dir {
		t.Errorf("resolve(/tmp/) = %+v, %v; want the directory /tmp", got, err)
	}
	if got, err := h.resolve("/"); err == nil {
		t.Errorf("exec's resolve(/) = %+v, want refused", got)
	}
}

// FuzzResolvePath checks that no input, however it combines dots, slashes,
// backslashes, aliases and the planted symlinks, resolves outside the typed
// roots: neither the path reported nor the directory descriptor the
// target hangs on, as the kernel names it; that the result is fully
// resolved, so nothing more would follow a link; and that its virtual
// path resolves back to it.
func FuzzResolvePath(f *testing.F) {
	for _, seed := range []string{
		"", ".", "/", "sub", "../x", "/etc/passwd", "root/etc", "up/up", "sub/back/x", "outside/../..",
		"dangle/x", "loop", "sub/hop/tmp", "rel//in/../..", "file/..", "/uploads/../..", "\\..\\..\\etc",
		"/outputs", "/skills/s/../../user-data", "totmp/../../outside", "/mnt", "/mnt/user-data/..", "workspace/../..",
		"sub/in/../fileref", "toskills/../user-data/uploads/in.txt", "totmp/new/dirs/f",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	tr := plantTree(f)
	h := tr.handler()
	roots := []string{tr.ws, tr.tmp, tr.outputs, tr.uploads, tr.skills}
	f.Fuzz(func(t *testing.T, p string, listing bool) {
		got, err := resolveForTest(t, h, p, listing)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got.host) || filepath.Clean(got.host) != got.host {
			t.Fatalf("resolve(%q) = %q, not a clean absolute path", p, got.host)
		}
		for _, place := range []string{got.host, got.held} {
			ok := listing && (place == tr.base+"/mnt" || place == tr.base+"/mnt/user-data")
			for _, r := range roots {
				ok = ok || inside(place, r)
			}
			if !ok {
				t.Fatalf("resolve(%q) = %+v, outside the roots", p, got)
			}
		}
		if !inside(got.host, got.held) {
			t.Fatalf("resolve(%q) = %+v: the path is not below the directory held", p, got)
		}
		if again, err := realPathOracle(got.host); err != nil || again != got.host {
			t.Fatalf("resolve(%q) = %q, which resolves further to %q, %v", p, got.host, again, err)
		}
		if back, err := resolveForTest(t, h, got.virt, listing); err != nil || back.host != got.host {
			t.Fatalf("resolve(%q) = %+v, but its virtual path resolves to %+v, %v", p, got, back, err)
		}
	})
}

// inside is the fuzz oracle, written apart from within on purpose.
func inside(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// realPathOracle resolves every symlink in the longest existing prefix of
// the clean absolute path p by path, the old way, and appends the rest.
func realPathOracle(p string) (string, error) {
	var rest []string
	for dir := p; ; dir = filepath.Dir(dir) {
		r, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == "/" {
			return "", err
		}
		if _, lerr := os.Lstat(dir); lerr == nil {
			return "", errors.New("dangling symlink")
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}
