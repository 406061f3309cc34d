package e2e

import (
	"archive/tar"
	"crypto/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// pathRoute calls one route that takes a path, with p as that path.
type pathRoute struct {
	name string
	call func(sb *sandbox, p string) (int, []byte)
}

// pathRoutes are every control-plane route that takes a path, exec's cwd
// included.
func pathRoutes(t testing.TB) []pathRoute {
	tarball := tarOf(t, map[string]string{"x": "pwned"})
	q := func(p string) string { return "?path=" + url.QueryEscape(p) }
	post := func(rest string, body func(p string) any) func(*sandbox, string) (int, []byte) {
		return func(sb *sandbox, p string) (int, []byte) { return sb.route("POST", rest, body(p)) }
	}
	return []pathRoute{
		{"view", post("/files/view", func(p string) any { return api.ViewRequest{Path: p} })},
		{"create", post("/files", func(p string) any { return api.FileCreateRequest{Path: p, Content: "pwned"} })},
		{"str-replace", post("/files/str-replace", func(p string) any { return api.StrReplaceRequest{Path: p, OldStr: "root", NewStr: "pwned"} })},
		{"ls", post("/files/ls", func(p string) any { return api.LsRequest{Path: p} })},
		{"glob", post("/files/glob", func(p string) any { return api.GlobRequest{Path: p, Pattern: "*"} })},
		{"grep", post("/files/grep", func(p string) any { return api.GrepRequest{Path: p, Pattern: "root"} })},
		{"watch", post("/files/watch", func(p string) any { return api.WatchRequest{Path: p, TimeoutSeconds: 0.1} })},
		{"raw get", func(sb *sandbox, p string) (int, []byte) { return sb.route("GET", "/files/raw"+q(p), nil) }},
		{"raw put", func(sb *sandbox, p string) (int, []byte) { return sb.route("PUT", "/files/raw"+q(p), "pwned") }},
		{"archive get", func(sb *sandbox, p string) (int, []byte) { return sb.route("GET", "/files/archive"+q(p), nil) }},
		{"archive put", func(sb *sandbox, p string) (int, []byte) { return sb.route("POST", "/files/archive"+q(p), tarball) }},
		{"exec cwd", post("/exec", func(p string) any { return api.ExecRequest{Command: "pwd", Cwd: p} })},
	}
}

// plantLinks is what an agent could do to reach out of the roots: symlinks
// inside the workspace to the jail's root, the sidecar's socket directory,
// a parent chain, a file and nowhere (outside the roots and inside); plus
// one that stays inside (to /tmp).
const plantLinks = `set -e
mkdir -p /workspace/sub && echo 'root in sub' > /workspace/sub/in.txt
ln -s / /workspace/root
ln -s /run/boxkite /workspace/r
ln -s ../.. /workspace/up
ln -s /etc/passwd /workspace/pw
ln -s /nonexistent/file /workspace/dangle
ln -s sub/nonexistent/file /workspace/dangle-in
ln -s /proc/self/root /workspace/procroot
ln -s /tmp /workspace/t
echo 'root in tmp' > /tmp/in-tmp.txt`

// TestContainment is the reference's path containment matrix against a
// real jail: every path that leads out of the typed roots, by name or
// through a symlink an agent planted, is refused by every route that takes
// a path, listings skip such symlinks silently, and the host is untouched.
func TestContainment(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.sh(plantLinks)

	// A file on the host next to the state directory: the jail's /tmp is
	// its own tmpfs, so the same path inside names another file.
	canary := filepath.Join(filepath.Dir(sb.s.StateDir), "bxk-canary-"+rand.Text())
	if err := os.WriteFile(canary, []byte("host canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(canary) })

	escapes := []struct{ path, msg string }{
		{"../etc/passwd", ""},
		{"/workspace/../etc/passwd", ""},
		{"/uploads/../../etc/passwd", ""},
		{"/etc/passwd", ""},
		{"/etc", ""},
		{"/proc/self/environ", ""},
		{"/proc/1/root", ""},
		{"/run/boxkite/sidecar.sock", ""},
		{"/run/boxkite", ""},
		{"/usr/bin", ""},
		{"/mnt/other", ""},
		{"root", ""},
		{"root/etc/passwd", ""},
		{"r", ""},
		{"r/sidecar.sock", ""},
		{"up", ""},
		{"up/etc/passwd", ""},
		{"up/run/boxkite/sidecar.sock", ""},
		{"pw", ""},
		{"procroot", ""},
		{"procroot/etc/passwd", ""},
		{"dangle", ""}, // a link out of the roots is refused without looking where it leads
		{"dangle-in", "dangling symlink"},
		{"sub/../up/etc", ""},
		{"\\etc\\passwd", ""}, // backslashes are slashes
	}
	routes := pathRoutes(t)
	for _, e := range escapes {
		want := e.msg
		if want == "" {
			want = "Invalid path outside allowed roots: " + e.path
		}
		for _, r := range routes {
			status, body := r.call(sb, e.path)
			if status != http.StatusBadRequest {
				t.Errorf("%s %q = %d %s, want 400", r.name, e.path, status, body)
				continue
			}
			if msg := apiError(t, body).Message; !strings.Contains(msg, want) {
				t.Errorf("%s %q: message %q, want it to contain %q", r.name, e.path, msg, want)
			}
		}
	}

	t.Run("listings skip planted symlinks", func(t *testing.T) {
		sb := sb.in(t)
		var ls api.LsResult
		mustDecode(t, sb.ok("POST", "/files/ls", api.LsRequest{Path: "/"}), &ls)
		var names []string
		for _, e := range ls.Entries {
			names = append(names, e.Path)
		}
		if want := "/workspace/sub/ /workspace/t/"; strings.Join(names, " ") != want {
			t.Errorf("ls / = %v, want %s (links out of the roots skipped, /tmp kept)", names, want)
		}
		var glob api.GlobResult
		mustDecode(t, sb.ok("POST", "/files/glob", api.GlobRequest{Pattern: "**/*"}), &glob)
		for _, m := range glob.Matches {
			if !strings.HasPrefix(m.Path, "/workspace/sub/") && !strings.HasPrefix(m.Path, "/workspace/t/") {
				t.Errorf("glob **/* matched %s, outside sub/ and t/", m.Path)
			}
		}
		var grep api.GrepResult
		mustDecode(t, sb.ok("POST", "/files/grep", api.GrepRequest{Pattern: "^root"}), &grep)
		var hits []string
		for _, m := range grep.Matches {
			hits = append(hits, m.Path)
		}
		// Walks do not follow symlinked directories (as Python's rglob), so
		// not even t/ is searched; nothing reaches /etc/passwd.
		if want := "/workspace/sub/in.txt"; strings.Join(hits, " ") != want {
			t.Errorf("grep ^root = %v, want %s (not /etc/passwd through root/, up/ or pw)", hits, want)
		}
	})

	t.Run("a symlink to another root is followed", func(t *testing.T) {
		sb := sb.in(t)
		var v api.ViewResult
		mustDecode(t, sb.ok("POST", "/files/view", api.ViewRequest{Path: "t/in-tmp.txt"}), &v)
		if v.Content != "root in tmp\n" {
			t.Errorf("view t/in-tmp.txt = %q", v.Content)
		}
		if out := sb.sh("pwd"); out != "/workspace\n" {
			t.Errorf("pwd = %q", out)
		}
		status, body := sb.route("POST", "/exec", api.ExecRequest{Command: "pwd", Cwd: "t"})
		var res api.ExecResult
		if mustDecode(t, body, &res); status != http.StatusOK || res.Stdout != "/tmp\n" {
			t.Errorf("exec in cwd t = %d %s, want /tmp", status, body)
		}
	})

	t.Run("/ is the workspace, not the jail's root", func(t *testing.T) {
		sb := sb.in(t)
		var v api.ViewResult
		mustDecode(t, sb.ok("POST", "/files/view", api.ViewRequest{Path: "/"}), &v)
		if !v.IsDirectory || !containsAll(v.Entries, "sub", "root") || containsAll(v.Entries, "usr") {
			t.Errorf("view / = %+v, want the workspace's entries", v)
		}
	})

	t.Run("exec refuses / as cwd", func(t *testing.T) {
		sb := sb.in(t)
		status, body := sb.route("POST", "/exec", api.ExecRequest{Command: "pwd", Cwd: "/"})
		if status != http.StatusBadRequest || !strings.Contains(apiError(t, body).Message, "outside allowed roots") {
			t.Errorf("exec cwd / = %d %s, want 400 outside allowed roots", status, body)
		}
	})

	t.Run("the host is untouched", func(t *testing.T) {
		sb := sb.in(t)
		// Inside the jail the canary's path is the jail's /tmp: writable,
		// and a different file.
		name := "/tmp/" + filepath.Base(canary)
		sb.ok("POST", "/files", api.FileCreateRequest{Path: name, Content: "jail\n"})
		sb.ok("PUT", "/files/raw?path="+url.QueryEscape("root"+name), "jail raw\n")
		sb.sh("echo jail exec >> " + name)
		var v api.ViewResult
		mustDecode(t, sb.ok("POST", "/files/view", api.ViewRequest{Path: name}), &v)
		if v.Content != "jail raw\njail exec\n" {
			t.Errorf("jail's %s = %q", name, v.Content)
		}
		if b, err := os.ReadFile(canary); err != nil || string(b) != "host canary\n" {
			t.Errorf("host canary = %q, %v; want it unchanged", b, err)
		}
		// Nor is the control plane's state directory (and its database)
		// reachable by its host path.
		db := filepath.Join(sb.s.StateDir, "boxkite.db")
		status, body := sb.route("POST", "/files/view", api.ViewRequest{Path: db})
		if status != http.StatusNotFound {
			t.Errorf("view %s = %d %s, want 404", db, status, body)
		}
		if res := sb.exec("ls " + sb.s.StateDir); res.ExitCode == 0 {
			t.Errorf("ls %s in the jail succeeded: %s", sb.s.StateDir, res.Stdout)
		}
	})

	t.Run("present_files skips what lies outside", func(t *testing.T) {
		sb := sb.in(t)
		var res api.PresentFilesResult
		mustDecode(t, sb.ok("POST", "/files/present", api.PresentFilesRequest{Filepaths: []string{"pw", "root/etc/passwd", "/etc/hostname", "up/etc/group", "sub/in.txt"}}), &res)
		if len(res.Files) != 1 || res.Files[0].FilePath != "/mnt/user-data/outputs/in.txt" {
			t.Errorf("present = %+v, want only sub/in.txt", res)
		}
		if out := sb.sh("ls -A /mnt/user-data/outputs"); out != "in.txt\n" {
			t.Errorf("outputs holds %q", out)
		}
	})

	t.Run("patterns cannot climb", func(t *testing.T) {
		sb := sb.in(t)
		for _, pat := range []string{"../*", "../../etc/*", "/etc/*", "**/../../etc/passwd", "up/*", "root/etc/*"} {
			var glob api.GlobResult
			mustDecode(t, sb.ok("POST", "/files/glob", api.GlobRequest{Pattern: pat}), &glob)
			if len(glob.Matches) != 0 {
				t.Errorf("glob %q = %+v, want nothing", pat, glob.Matches)
			}
			var grep api.GrepResult
			mustDecode(t, sb.ok("POST", "/files/grep", api.GrepRequest{Pattern: "root", Glob: pat}), &grep)
			if len(grep.Matches) != 0 {
				t.Errorf("grep with glob %q = %+v, want nothing", pat, grep.Matches)
			}
		}
	})

	t.Run("archives cannot plant a way out", func(t *testing.T) {
		sb := sb.in(t)
		entries := []struct {
			name string
			hdrs []tar.Header
		}{
			{"symlink to /etc", []tar.Header{{Name: "etc", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}},
			{"symlink up", []tar.Header{{Name: "up2", Typeflag: tar.TypeSymlink, Linkname: "../../../.."}}},
			{"symlink to the socket", []tar.Header{{Name: "sock", Typeflag: tar.TypeSymlink, Linkname: "/run/boxkite/sidecar.sock"}}},
			{"hard link to passwd", []tar.Header{{Name: "pw2", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}},
			{"dot-dot name", []tar.Header{{Name: "../../etc/x", Typeflag: tar.TypeReg, Mode: 0o644}}},
			{"absolute name", []tar.Header{{Name: "/etc/x", Typeflag: tar.TypeReg, Mode: 0o644}}},
			{"through a planted link", []tar.Header{{Name: "root/tmp/via-link", Typeflag: tar.TypeReg, Mode: 0o644}}},
			{"link then through it", []tar.Header{
				{Name: "t2", Typeflag: tar.TypeSymlink, Linkname: "/tmp"},
				{Name: "t2/x", Typeflag: tar.TypeReg, Mode: 0o644},
			}},
		}
		for _, e := range entries {
			status, body := sb.route("POST", "/files/archive?path=/workspace", tarHeaders(t, e.hdrs))
			if status != http.StatusBadRequest {
				t.Errorf("%s: archive upload = %d %s, want 400", e.name, status, body)
			}
		}
		if out := sb.sh("ls /etc/x /tmp/via-link /tmp/x 2>&1; true"); strings.Count(out, "No such file") != 3 {
			t.Errorf("after the archives: %q", out)
		}
	})

	t.Run("read-only roots", func(t *testing.T) {
		sb := sb.in(t)
		for _, p := range []string{"/uploads/x.txt", "/skills/x.txt", "/mnt/user-data/uploads/x.txt", "/mnt/skills/x.txt"} {
			status, body := sb.route("POST", "/files", api.FileCreateRequest{Path: p, Content: "x"})
			if status != http.StatusForbidden || !strings.Contains(apiError(t, body).Message, "Cannot write to read-only path") {
				t.Errorf("create %s = %d %s, want 403 read-only", p, status, body)
			}
			status, body = sb.route("POST", "/files/view", api.ViewRequest{Path: p})
			if status != http.StatusNotFound {
				t.Errorf("view %s = %d %s, want 404", p, status, body)
			}
		}
		var ls api.LsResult
		mustDecode(t, sb.ok("POST", "/files/ls", api.LsRequest{Path: "/mnt"}), &ls)
		var names []string
		for _, e := range ls.Entries {
			names = append(names, e.Path)
		}
		if want := "/mnt/skills/ /mnt/user-data/"; strings.Join(names, " ") != want {
			t.Errorf("ls /mnt = %v, want %s", names, want)
		}
	})
}
