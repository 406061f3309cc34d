package secretfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A group the process is not in, for the group-readable case.
	other := write("other-group", "s3cret", 0o640)
	if err := os.Chown(other, -1, os.Getegid()+1); err != nil {
		t.Fatalf("chown: %v (the test runs as root in CI)", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(write("target", "linked\n", 0o600), link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		want    string
		exposed bool   // errors.Is(err, ErrExposed)
		errText string // else a substring of the error; "" means no error
	}{
		{"owner only", write("a", "  key\n", 0o600), "key", false, ""},
		{"read-only owner", write("b", "key", 0o400), "key", false, ""},
		{"own group", write("c", "key", 0o640), "key", false, ""},
		{"other group", other, "", true, ""},
		{"world-readable", write("d", "key", 0o644), "", true, ""},
		{"others may write", write("e", "key", 0o602), "", true, ""},
		{"empty", write("f", " \n", 0o600), "", false, "is empty"},
		{"too large", write("g", strings.Repeat("k", MaxSize+1), 0o600), "", false, "larger than"},
		{"missing", filepath.Join(dir, "none"), "", false, "no such file"},
		{"directory", dir, "", false, "not a regular file"},
		{"link to a file", link, "linked", false, ""},
		{"bad descriptor path", "/dev/fd/x", "", false, "want /dev/fd/N"},
		{"standard input", "/dev/fd/0", "", false, "want /dev/fd/N"},
		{"closed descriptor", "/dev/fd/999", "", false, "not open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(tt.path)
			switch {
			case tt.exposed:
				if !errors.Is(err, ErrExposed) || !strings.Contains(err.Error(), "chmod 600") {
					t.Errorf("Read = %q, %v; want ErrExposed with a chmod hint", got, err)
				}
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Errorf("Read = %q, %v; want an error mentioning %q", got, err, tt.errText)
				}
			case err != nil || got != tt.want:
				t.Errorf("Read = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestReadDescriptor reads a secret from a pipe passed as descriptor 3 to
// a child process (this test binary), as `boxkite up` hands the server its
// key, and checks the descriptor is closed afterwards.
func TestReadDescriptor(t *testing.T) {
	if os.Getenv("SECRETFILE_CHILD") == "1" {
		s, err := Read("/dev/fd/3")
		var st syscall.Stat_t
		fmt.Printf("secret=%q err=%v closed=%v\n", s, err, syscall.Fstat(3, &st) != nil)
		os.Exit(0)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadDescriptor$")
	cmd.Env = append(os.Environ(), "SECRETFILE_CHILD=1")
	cmd.ExtraFiles = []*os.File{r}
	if _, err := w.WriteString("bxk_live_secret\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out, err := cmd.Output()
	r.Close()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if want := `secret="bxk_live_secret" err=<nil> closed=true`; !strings.Contains(string(out), want) {
		t.Errorf("child printed %q, want %q", out, want)
	}
}
