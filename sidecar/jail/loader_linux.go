package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LoaderDir holds, in a jail booted from an image, the host's dynamic
// loader (ld.so), the libraries the sidecar binary was linked against
// (lib/) and the binary itself (sidecar), each a read-only bind of the
// host's file.
//
// Why: `go install` links the sidecar against the host's glibc (net and
// os/user use cgo), and init executes it again after pivot_root, when the
// kernel looks for its loader inside the image. An image without glibc
// (busybox, alpine, distroless) has none, and one with an older glibc
// lacks the symbol versions the binary needs. Running the host's loader
// explicitly with the host's libraries makes the sidecar independent of
// what the image holds. A static sidecar needs none of it.
const LoaderDir = "/.boxkite"

// ServeCommand returns the path and argv that start the sidecar binary
// after Setup: /proc/self/exe as it is, or, when Setup placed LoaderDir,
// the host's loader running the bound binary.
func ServeCommand(argv []string) (string, []string) {
	ld := LoaderDir + "/ld.so"
	if _, err := os.Stat(ld); err != nil {
		return "/proc/self/exe", argv
	}
	full := []string{ld, "--library-path", LoaderDir + "/lib", LoaderDir + "/sidecar"}
	return ld, append(full, argv[1:]...)
}

// cloneLoader clones the files of LoaderDir for an image jail, when the
// running binary is dynamically linked.
func (b *builder) cloneLoader() error {
	if b.skeleton {
		return b.checkStaticInSkeleton()
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	interp, libs, err := dynamicDeps(exe)
	if err != nil || interp == "" {
		return err
	}
	files := map[string]string{LoaderDir + "/ld.so": interp, LoaderDir + "/sidecar": exe}
	dirs := libDirs(interp)
	for _, lib := range libs {
		p, err := findLib(lib, dirs)
		if err != nil {
			return err
		}
		files[LoaderDir+"/lib/"+lib] = p
	}
	for target, src := range files {
		t, err := cloneTree(unix.AT_FDCWD, src, target, roAttrs, false)
		if err != nil {
			return err
		}
		t.file = true
		b.system = append(b.system, t)
	}
	return nil
}

// dynamicDeps returns the ELF interpreter of path and the libraries it
// needs; interp is "" for a static binary.
func dynamicDeps(path string) (interp string, libs []string, err error) {
	if interp, libs, err = ELFDeps(path); err != nil {
		return "", nil, fmt.Errorf("read own binary: %w", err)
	}
	return interp, libs, nil
}

// libDirs are where the host keeps the libraries that go with interp:
// the loader's own directory first (Debian's multiarch directory), then
// the usual ones.
func libDirs(interp string) []string {
	dirs := []string{}
	if real, err := filepath.EvalSymlinks(interp); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	}
	return append(dirs, filepath.Dir(interp), "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

func findLib(name string, dirs []string) (string, error) {
	if strings.Contains(name, "/") {
		return "", fmt.Errorf("find library %q: not a plain name", name)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("find library %s: not in %s", name, strings.Join(dirs, ", "))
}

// checkStaticInSkeleton stands for cloneLoader in a jail cloned from the
// spawner's skeleton, whose proc shows no process (no /proc/self/exe) and
// which holds no sidecar binary to clone: only a static sidecar boots an
// image there (the Spawner starts a dynamic one's image jails itself). It
// reads the binary from the descriptor init runs (fd 4, see Start).
func (b *builder) checkStaticInSkeleton() error {
	fd, err := unix.FcntlInt(launchFD+1, unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	f := os.NewFile(uintptr(fd), "sidecar")
	defer f.Close()
	interp, _, err := elfDeps(f)
	if err != nil {
		return fmt.Errorf("read own binary: %w", err)
	}
	if interp != "" {
		return errors.New("boot image: a dynamically linked sidecar boots images only from its caller, not the spawner's skeleton")
	}
	return nil
}
