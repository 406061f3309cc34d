package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// wantErr checks an error answer's status, and that its message contains msg.
func wantErr(t *testing.T, what string, status int, body []byte, wantStatus int, msg string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s = %d %s, want %d", what, status, body, wantStatus)
		return
	}
	if got := apiError(t, body).Message; !strings.Contains(got, msg) {
		t.Errorf("%s: message %q, want it to contain %q", what, got, msg)
	}
}

// TestStrReplace is the reference's str_replace matrix in a real jail: 0
// occurrences is a result, more than one without replace_all a 400, and
// the atomic rewrite keeps the file's mode and owner.
func TestStrReplace(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.ok("POST", "/files", api.FileCreateRequest{Path: "edit.sh", Content: "alpha beta beta gamma\n"})
	sb.sh("chmod 755 /workspace/edit.sh")

	tests := []struct {
		name       string
		req        api.StrReplaceRequest
		status     int
		want       api.StrReplaceResult // when 200
		msg        string               // when not 200
		wantOnDisk string
	}{
		{
			"none",
			api.StrReplaceRequest{OldStr: "delta", NewStr: "x"},
			200,
			api.StrReplaceResult{Path: "/workspace/edit.sh"},
			"", "alpha beta beta gamma\n",
		},
		{
			"one",
			api.StrReplaceRequest{OldStr: "alpha", NewStr: "ALPHA"},
			200,
			api.StrReplaceResult{Path: "/workspace/edit.sh", Replaced: true, Occurrences: 1},
			"", "ALPHA beta beta gamma\n",
		},
		{
			"many",
			api.StrReplaceRequest{OldStr: "beta", NewStr: "x"},
			400,
			api.StrReplaceResult{},
			"old_str appears 2 times. Must appear exactly once.", "ALPHA beta beta gamma\n",
		},
		{
			"replace all",
			api.StrReplaceRequest{OldStr: "beta", NewStr: "B", ReplaceAll: true},
			200,
			api.StrReplaceResult{Path: "/workspace/edit.sh", Replaced: true, Occurrences: 2},
			"", "ALPHA B B gamma\n",
		},
		{
			"multi-line",
			api.StrReplaceRequest{OldStr: "gamma\n", NewStr: "gamma\ndelta\n"},
			200,
			api.StrReplaceResult{Path: "/workspace/edit.sh", Replaced: true, Occurrences: 1},
			"", "ALPHA B B gamma\ndelta\n",
		},
		{
			"empty old_str",
			api.StrReplaceRequest{OldStr: "", NewStr: "x"},
			422,
			api.StrReplaceResult{},
			"old_str must not be empty", "ALPHA B B gamma\ndelta\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := sb.in(t)
			tt.req.Path = "edit.sh"
			status, body := sb.route("POST", "/files/str-replace", tt.req)
			if tt.status == http.StatusOK {
				if status != http.StatusOK {
					t.Fatalf("str-replace = %d %s", status, body)
				}
				var got api.StrReplaceResult
				mustDecode(t, body, &got)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
			} else {
				wantErr(t, "str-replace", status, body, tt.status, tt.msg)
			}
			if got := sb.sh("cat /workspace/edit.sh"); got != tt.wantOnDisk {
				t.Errorf("file = %q, want %q", got, tt.wantOnDisk)
			}
		})
	}
	t.Run("mode and owner kept", func(t *testing.T) {
		sb := sb.in(t)
		if got := sb.sh("stat -c '%a %u:%g' /workspace/edit.sh"); got != "755 1001:1001\n" {
			t.Errorf("after the edits: %q, want 755 1001:1001", got)
		}
		if got := sb.sh("ls -A /workspace"); got != "edit.sh\n" {
			t.Errorf("workspace holds %q: temp files left behind?", got)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		sb := sb.in(t)
		status, body := sb.route("POST", "/files/str-replace", api.StrReplaceRequest{Path: "missing.txt", OldStr: "a", NewStr: "b"})
		wantErr(t, "missing file", status, body, 404, "File not found")
		status, body = sb.route("POST", "/files/str-replace", api.StrReplaceRequest{Path: "/uploads/a.txt", OldStr: "a", NewStr: "b"})
		wantErr(t, "read-only root", status, body, 403, "Cannot edit read-only path")
		status, body = sb.route("POST", "/files/str-replace", api.StrReplaceRequest{Path: "/", OldStr: "a", NewStr: "b"})
		if status/100 != 4 {
			t.Errorf("str-replace on the workspace directory = %d %s, want a 4xx", status, body)
		}
	})
}

// TestView covers ranges, the 100 KiB output cap, binary and oversized
// files and missing paths, on files an agent wrote with commands.
func TestView(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.sh(`set -e
printf 'l1\nl2\nl3\nl4\nl5\n' > /workspace/five.txt
head -c 204800 /dev/zero | tr '\0' a > /workspace/big.txt
printf 'caf\303\251 \342\202\254\n' > /workspace/utf8.txt
printf 'text\377\376\n' > /workspace/bin.dat
truncate -s 26M /workspace/huge.txt
mkdir -p /workspace/dir/b /workspace/dir/a && touch /workspace/dir/c
mkfifo /workspace/fifo`)

	tests := []struct {
		name  string
		req   api.ViewRequest
		want  api.ViewResult
		check func(t *testing.T, got api.ViewResult) // instead of want
	}{
		{name: "whole", req: api.ViewRequest{Path: "five.txt"}, want: api.ViewResult{Content: "l1\nl2\nl3\nl4\nl5\n", Lines: 5}},
		{name: "range", req: api.ViewRequest{Path: "five.txt", ViewRange: []int{2, 3}}, want: api.ViewResult{Content: "l2\nl3", Lines: 5}},
		{name: "to the end", req: api.ViewRequest{Path: "/workspace/five.txt", ViewRange: []int{4, -1}}, want: api.ViewResult{Content: "l4\nl5", Lines: 5}},
		{name: "past the end", req: api.ViewRequest{Path: "five.txt", ViewRange: []int{5, 99}}, want: api.ViewResult{Content: "l5", Lines: 5}},
		{name: "empty range", req: api.ViewRequest{Path: "five.txt", ViewRange: []int{4, 2}}, want: api.ViewResult{Content: "", Lines: 5}},
		{name: "utf-8", req: api.ViewRequest{Path: "utf8.txt"}, want: api.ViewResult{Content: "café €\n", Lines: 1}},
		{name: "directory", req: api.ViewRequest{Path: "dir"}, want: api.ViewResult{IsDirectory: true, Entries: []string{"a", "b", "c"}}},
		{name: "truncated", req: api.ViewRequest{Path: "big.txt"}, check: func(t *testing.T, got api.ViewResult) {
			want := strings.Repeat("a", api.MaxViewOutput) + "\n... (truncated)"
			if got.Content != want || got.Lines != 1 {
				t.Errorf("view big.txt: %d bytes, lines %d; want %d bytes ending in the mark, lines 1", len(got.Content), got.Lines, len(want))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := sb.in(t)
			var got api.ViewResult
			mustDecode(t, sb.ok("POST", "/files/view", tt.req), &got)
			if tt.check != nil {
				tt.check(t, got)
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
		})
	}
	refusals := []struct {
		path   string
		status int
		msg    string
	}{
		{"bin.dat", 422, "not UTF-8"},
		{"huge.txt", 422, "too large to view"},
		{"missing.txt", 404, "File not found: missing.txt"},
		{"/tmp/nothing/here", 404, "File not found"},
		{"fifo", 400, "Not a regular file"}, // and opening it must not hang
	}
	for _, r := range refusals {
		status, body := sb.route("POST", "/files/view", api.ViewRequest{Path: r.path})
		wantErr(t, "view "+r.path, status, body, r.status, r.msg)
	}
}

// TestFileCreate writes through each writable root and checks ownership,
// modes and sizes from inside the sandbox.
func TestFileCreate(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	tests := []struct {
		path, wantPath string
	}{
		{"a.txt", "/workspace/a.txt"},
		{"workspace/deep/er/b.txt", "/workspace/deep/er/b.txt"},
		{"./c.txt", "/workspace/c.txt"},
		{"/outputs/o.txt", "/mnt/user-data/outputs/o.txt"},
		{"/tmp/t.txt", "/tmp/t.txt"},
		{"sub\\win.txt", "/workspace/sub/win.txt"},
	}
	for _, tt := range tests {
		content := "héllo " + tt.path + "\n"
		var got api.FileCreateResult
		mustDecode(t, sb.ok("POST", "/files", api.FileCreateRequest{Path: tt.path, Content: content}), &got)
		want := api.FileCreateResult{Path: tt.wantPath, Size: int64(len(content)), Created: true}
		if got != want {
			t.Errorf("create %q = %+v, want %+v", tt.path, got, want)
		}
		if out := sb.sh("stat -c '%a %U' " + tt.wantPath + " && cat " + tt.wantPath); out != "644 sandbox\n"+content {
			t.Errorf("%s in the sandbox: %q", tt.wantPath, out)
		}
	}
	// The 10 MiB content cap is the sidecar's unit tests' business: a
	// body that large costs seconds under -race for nothing new here.

	t.Run("raw and archive round trips", func(t *testing.T) {
		sb := sb.in(t)
		files := map[string]string{"top.txt": "top\n", "d/e/deep.txt": "deep\n"}
		var ar api.ArchiveResult
		mustDecode(t, sb.ok("POST", "/files/archive?path=unpacked", tarOf(t, files)), &ar)
		if ar.Files != 2 {
			t.Errorf("archive upload = %+v, want 2 files", ar)
		}
		if out := sb.sh("cd /workspace/unpacked && stat -c '%U %n' top.txt d/e/deep.txt"); out != "sandbox top.txt\nsandbox d/e/deep.txt\n" {
			t.Errorf("unpacked in the sandbox: %q", out)
		}
		if got := untar(t, sb.ok("GET", "/files/archive?path=unpacked", nil)); !cmp.Equal(got, files) {
			t.Errorf("archive download = %v, want %v", got, files)
		}
		raw := "\x00\xffbinary\n"
		sb.ok("PUT", "/files/raw?path=/outputs/raw.bin", raw)
		if got := sb.ok("GET", "/files/raw?path=/mnt/user-data/outputs/raw.bin", nil); string(got) != raw {
			t.Errorf("raw download = %q, want %q", got, raw)
		}
		if out := sb.sh("od -An -c /mnt/user-data/outputs/raw.bin | tr -s ' '"); out != " \\0 377 b i n a r y \\n\n" {
			t.Errorf("raw file in the sandbox: %q", out)
		}
	})
}
