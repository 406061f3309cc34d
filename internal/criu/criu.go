// Package criu says whether CRIU checkpoint/restore can work on this host,
// from `criu check`: the local driver's pause mode checkpoint and
// `boxkite doctor` ask it. Standard library only.
package criu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Find returns the criu binary on PATH, or in the sbin directories a
// user's PATH often lacks, below root ("/" but for tests); "" when there
// is none.
func Find(root string) string {
	if root == "/" {
		if p, err := exec.LookPath("criu"); err == nil {
			return p
		}
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
		p := filepath.Join(root, dir, "criu")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Problem runs `criu check` and says why checkpoint/restore cannot work
// here: criu missing, or the cause `criu check` gives; "" when it passes.
func Problem() string {
	path := Find("/")
	if path == "" {
		return "criu is not installed (Debian: apt-get install criu)"
	}
	out, err := exec.Command(path, "check").CombinedOutput()
	if err == nil {
		return ""
	}
	return "`criu check` fails on this kernel: " + Cause(string(out))
}

// Cause picks the line of criu's output that names why it failed: the
// first error that is not a child's exit status, else the last line.
func Cause(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if strings.Contains(l, "Error") && !strings.Contains(l, "exited, status") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}
