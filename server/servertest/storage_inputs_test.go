package servertest_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestStorageSyncNames is issue 26's acceptance 1 with other inputs than
// TestStorageSync's: names with spaces, unicode, '%', '?', '#', a leading
// dash, names that differ only by case, a '\' beside its '/' twin (Azure
// and SeaweedFS read one as the other), control characters, a very deep
// path, empty, sparse and hard-linked files, a rename, and a file
// replaced by a directory and back. Each arrives byte-exact, is listed by
// its name, and downloads by it after destroy.
func TestStorageSyncNames(t *testing.T) {
	for _, kind := range objtest.Kinds {
		t.Run(kind, func(t *testing.T) { testStorageSyncNames(t, kind) })
	}
}

func testStorageSyncNames(t *testing.T, kind string) {
	r := startStorageRun(t, kind, nil)
	b, c, sb, prefix := r.b, r.c, r.sb, r.prefix
	ctx := context.Background()
	deep := strings.Repeat("d/", 60) + "leaf.txt"
	mustExec(t, c, sb.ID, `set -e
cd /workspace
printf 'space' > 'with space.txt'
printf 'unicode' > 'ünï cødé 文件.txt'
printf 'pct' > 'p%20q%zz.txt'
printf 'quest' > 'q?x=1&y.txt'
printf 'hash' > 'h#frag.txt'
printf 'dash' > ./-rf
printf 'dash2' > ./--help.txt
printf 'upper' > Case.txt
printf 'lower' > case.txt
printf 'plus' > 'a+b.txt'
printf 'bs' > 'back\slash.txt'
mkdir back && printf 'twin' > back/slash.txt
printf 'esc' > '%5C%25'
printf 'nl' > "$(printf 'new\nline')"
printf 'ctl' > "$(printf 'ctl\001\177')"
mkdir -p `+strings.TrimSuffix(deep, "/leaf.txt")+`
printf 'deep' > `+deep+`
: > empty.txt
truncate -s 3M sparse.bin
printf 'tail' >> sparse.bin
printf 'linked' > hard1.txt
ln hard1.txt hard2.txt
printf 'moved' > before.txt
printf 'was a file' > fd`)
	want := map[string]string{
		"with space.txt": "space", "ünï cødé 文件.txt": "unicode", "p%20q%zz.txt": "pct", "q?x=1&y.txt": "quest",
		"h#frag.txt": "hash", "-rf": "dash", "--help.txt": "dash2", "Case.txt": "upper", "case.txt": "lower",
		"a+b.txt": "plus", `back\slash.txt`: "bs", "back/slash.txt": "twin", "%5C%25": "esc", "new\nline": "nl", "ctl\x01\x7f": "ctl", deep: "deep", "empty.txt": "", "hard1.txt": "linked", "hard2.txt": "linked",
		"before.txt": "moved", "fd": "was a file", "sparse.bin": strings.Repeat("\x00", 3<<20) + "tail",
	}
	check := func(stage string) {
		t.Helper()
		if _, err := c.FlushSync(ctx, sb.ID); err != nil {
			t.Fatalf("%s: flush: %v", stage, err)
		}
		got := objtest.List(t, b, prefix)
		for p, content := range want {
			if size, ok := got[p]; !ok || size != int64(len(content)) {
				t.Errorf("%s: %q: in the bucket %v, size %d; want size %d", stage, p, ok, size, len(content))
				continue
			}
			if data := objtest.Read(t, b, prefix+storagesync.ObjectName(p)); string(data) != content {
				t.Errorf("%s: %q holds %.40q, want %.40q", stage, p, data, content)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%s: %q in the bucket, not in the workspace", stage, p)
			}
		}
	}
	check("first")

	// A rename, and a file replaced by a directory.
	mustExec(t, c, sb.ID, `set -e; cd /workspace; mv before.txt after.txt; rm fd; mkdir fd; printf 'now a dir' > fd/inner.txt`)
	delete(want, "before.txt")
	delete(want, "fd")
	want["after.txt"], want["fd/inner.txt"] = "moved", "now a dir"
	check("renamed, file to dir")

	// And back. fake-gcs-server keeps its objects as files and leaves
	// "fd" an empty directory once "fd/inner.txt" is deleted, so it
	// refuses an object "fd" from then on (GCS itself holds both);
	// TestFlushFileBecomesDirectory covers the flush's part.
	if kind != "gcs" {
		mustExec(t, c, sb.ID, `set -e; cd /workspace; rm -r fd; printf 'a file again' > fd`)
		delete(want, "fd/inner.txt")
		want["fd"] = "a file again"
		check("dir to file")
	}

	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	files, err := c.StoredFiles(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(files.Files) != len(want) {
		t.Errorf("after destroy: %d stored files, want %d", len(files.Files), len(want))
	}
	for _, f := range files.Files {
		content, ok := want[f.Path]
		if !ok {
			t.Errorf("after destroy: stored file %q not written", f.Path)
			continue
		}
		dl, err := c.DownloadStored(ctx, sb.ID, f.Path)
		if err != nil {
			t.Errorf("download %q after destroy: %v", f.Path, err)
			continue
		}
		var sbuf strings.Builder
		_, err = io.Copy(&sbuf, dl)
		dl.Close()
		if err != nil || sbuf.String() != content {
			t.Errorf("download %q after destroy: %v, %.40q; want %.40q", f.Path, err, sbuf.String(), content)
		}
	}
}
