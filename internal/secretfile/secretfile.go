// Package secretfile reads a secret (an API key, a signing key) that a
// program is handed as a file or a file descriptor rather than through its
// environment, which stays readable in /proc/<pid>/environ for the life of
// the process whatever the program does. boxkite-server and
// boxkite-bastion use it for every secret they are given.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// MaxSize bounds a secret file; secrets are short, and a mistaken path to
// a large file should fail rather than be read whole.
const MaxSize = 64 << 10

// ErrExposed marks a file that others than its owner (and its owner's own
// group) could read: the secret is not one any more.
var ErrExposed = errors.New("readable by others")

// Read returns the secret in path, surrounding white space removed.
//
// path is a regular file, or /dev/fd/N for a descriptor the process was
// started with (a pipe its parent writes the secret into), which is read
// to its end and closed, so no child inherits it. Links are followed: the
// path is the operator's, not the sandbox's. A file whose mode lets
// others read it is refused (ErrExposed); so is one its group may read,
// unless that group is the process's own effective group: a Kubernetes
// Secret mounted with fsGroup is root:<fsGroup> 0440, readable only by the
// pod's own group. Run `chmod 600 FILE` to fix the others.
func Read(path string) (string, error) {
	f, err := open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	if err := checkMode(path, fi); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxSize {
		return "", fmt.Errorf("%s is larger than %d bytes; a secret file holds just the secret", path, MaxSize)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// open opens path, taking over the descriptor of a /dev/fd/N path.
func open(path string) (*os.File, error) {
	if n, ok := strings.CutPrefix(path, "/dev/fd/"); ok {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < 3 {
			return nil, fmt.Errorf("%s: want /dev/fd/N with N ≥ 3, a descriptor passed to the process", path)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("%s: descriptor %d is not open: %w", path, fd, err)
		}
		syscall.CloseOnExec(fd)
		return os.NewFile(uintptr(fd), path), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open secret file: %w", err)
	}
	return f, nil
}

// checkMode refuses what is neither a regular file nor a pipe, and
// modes that let others read it.
func checkMode(path string, fi fs.FileInfo) error {
	mode := fi.Mode()
	if !mode.IsRegular() && mode.Type() != fs.ModeNamedPipe {
		return fmt.Errorf("%s is not a regular file or a pipe", path)
	}
	perm := mode.Perm()
	if perm&0o007 != 0 {
		return fmt.Errorf("%s is %w (mode %04o); run: chmod 600 %s", path, ErrExposed, perm, path)
	}
	if perm&0o070 != 0 {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Gid) != os.Getegid() {
			return fmt.Errorf("%s is %w in its group (mode %04o); run: chmod 600 %s", path, ErrExposed, perm, path)
		}
	}
	return nil
}
