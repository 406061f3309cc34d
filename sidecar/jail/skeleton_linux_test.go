package jail

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzProcFDPath checks procFDPath against the kernel's reading of a
// /proc/self/fd entry (name_to_int, fs/proc/base.c): decimal digits with
// no leading zero but for "0" itself, so each descriptor has one name.
// A name the kernel does not resolve (/proc/self/fd/03) must not be
// executed through a descriptor (jailFork.execFD) where execve would fail.
// procFDPath also bounds the number to four digits.
func FuzzProcFDPath(f *testing.F) {
	for _, seed := range []string{
		"/proc/self/fd/4", "/proc/self/fd/0", "/proc/self/fd/10", "/proc/self/fd/9999", "/proc/self/fd/10000",
		"/proc/self/fd/04", "/proc/self/fd/00", "/proc/self/fd/", "/proc/self/fd/-1", "/proc/self/fd/+1",
		"/proc/self/fd/4/", "/proc/self/fd/4x", "/proc/self/fd/٤", "/proc/self/fd//4", "/proc/self/fd/4\x00",
		"/proc/1/fd/4", "proc/self/fd/4", "/usr/bin/boxkite-sidecar", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, path string) {
		wantFD, wantOK := 0, false
		if rest, ok := strings.CutPrefix(path, "/proc/self/fd/"); ok {
			n, err := strconv.Atoi(rest)
			if err == nil && n >= 0 && n <= 9999 && strconv.Itoa(n) == rest {
				wantFD, wantOK = n, true
			}
		}
		fd, ok := procFDPath(path)
		if ok != wantOK || ok && fd != wantFD {
			t.Fatalf("procFDPath(%q) = %d, %v, want %d, %v", path, fd, ok, wantFD, wantOK)
		}
	})
}
