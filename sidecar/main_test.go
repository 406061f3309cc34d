package sidecar

import (
	"fmt"
	"io/fs"
	"os"
	"testing"
)

// TestMain fails the run when the shared temporary directory's mode
// changed under it, and puts it back: a benchmark that chmodded the
// parent of its b.TempDir()'s parent made /tmp 0755, and server/kube's
// pods could no longer write there.
func TestMain(m *testing.M) {
	tmp := os.TempDir()
	before, err := os.Stat(tmp)
	code := m.Run()
	if after, err2 := os.Stat(tmp); err == nil && err2 == nil && after.Mode() != before.Mode() {
		fmt.Fprintf(os.Stderr, "%s was %v and is %v after the tests: one chmodded it\n", tmp, before.Mode(), after.Mode())
		_ = os.Chmod(tmp, before.Mode()&(fs.ModePerm|fs.ModeSticky))
		code = 1
	}
	os.Exit(code)
}
