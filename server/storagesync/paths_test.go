package storagesync

import (
	"path"
	"strings"
	"testing"
	"time"
)

func TestStoredPath(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"a.txt", "a.txt", true},
		{"src/main.py", "src/main.py", true},
		{"/workspace/src/main.py", "src/main.py", true},
		{"", "", false},
		{"/workspace", "", false},
		{"/workspace/", "", false},
		{"/tmp/x", "", false},
		{"../other/x", "", false},
		{"a/../../b", "", false},
		{"a//b", "", false},
		{"./a", "", false},
		{"a/", "", false},
		{"a\x00b", "", false},
	} {
		got, ok := StoredPath(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("StoredPath(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzStoredPath: an accepted path, joined under a sandbox's prefix,
// stays under that prefix (no key of another sandbox or account).
func FuzzStoredPath(f *testing.F) {
	for _, s := range []string{"a", "/workspace/a/b", "../x", "a/../../b", "/workspace/../x", "..", "a/./b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, ok := StoredPath(p)
		if !ok {
			return
		}
		key := path.Join("pfx", "acct", "sb", rel)
		if !strings.HasPrefix(key, "pfx/acct/sb/") || key != "pfx/acct/sb/"+rel {
			t.Errorf("StoredPath(%q) = %q, which leaves the prefix as %q", p, rel, key)
		}
	})
}

func TestWorkspaceRel(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"a.txt", "a.txt", true},
		{"/workspace/a/b", "a/b", true},
		{"/workspace", "", true},
		{"/tmp/a", "", false},
		{"/workspace/../etc/passwd", "", false},
		{"", "", false},
	} {
		got, ok := workspaceRel(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("workspaceRel(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := redactor([]string{"AKIDSECRET", "x"})
	msg := r(`put k: Put "https://h/b/k?X-Amz-Signature=abc&sig=def": AKIDSECRET refused; AccountKey=zzz;`)
	for _, bad := range []string{"AKIDSECRET", "abc", "def", "zzz"} {
		if strings.Contains(msg, bad) {
			t.Errorf("redacted message %q still has %q", msg, bad)
		}
	}
	if long := r(strings.Repeat("e", 2000)); len(long) > maxErrorLen+4 {
		t.Errorf("a long error is kept whole (%d bytes)", len(long))
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := backoff(50); got != MaxBackoff {
		t.Errorf("backoff(50) = %s, want %s", got, MaxBackoff)
	}
}
