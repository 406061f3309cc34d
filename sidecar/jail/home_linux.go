package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// placeHome makes HomeDir the workspace: a symlink to it in the root
// tmpfs, or, when the image has a /home/user directory of its own, the
// workspace bound over it (with the mounts below it). An image whose
// /home holds no user entry, or is a symlink, has its /home laid out in
// the root tmpfs (placeImageHome), so the link has a place there too:
// every sandbox has HomeDir, whatever its image.
func (b *builder) placeHome() error {
	home := b.path(HomeDir)
	fi, err := os.Lstat(home)
	switch {
	case err == nil && fi.IsDir():
		t, err := cloneTree(unix.AT_FDCWD, b.path(WorkspaceDir), HomeDir, rwAttrs, true)
		if err != nil {
			return err
		}
		err = b.place(t)
		_ = unix.Close(t.fd)
		return err
	case err == nil:
		return nil // the image's own file or link
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("look up %s: %w", HomeDir, err)
	}
	if err := os.Mkdir(filepath.Dir(home), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", filepath.Dir(HomeDir), err)
	}
	if err := os.Symlink(WorkspaceDir, home); err != nil {
		if errors.Is(err, unix.EROFS) {
			return nil // the image's read-only /home
		}
		return fmt.Errorf("link %s to the workspace: %w", HomeDir, err)
	}
	return nil
}

// placeImageHome lays out the image's /home (the image's root is staged
// at staged) as a directory of the root tmpfs holding the image's entries,
// each bound read-only (a symlink copied), so that placeHome can put
// HomeDir there beside them: bound whole, the image's read-only /home
// would leave it no place. placeImage calls it for a /home without a user
// entry, and for a /home that is a symlink, which is resolved inside the
// image here (copied, it would leave no place either, and one naming an
// absolute path would name the host's until pivot_root); a dangling one
// leaves /home empty.
func (b *builder) placeImageHome(staged string) error {
	dir := filepath.Dir(HomeDir)
	root, err := unix.Open(staged, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the image's root: %w", err)
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, strings.TrimPrefix(dir, "/"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return makeMountPoint(b.path(dir), false) // a dangling link
	}
	if err != nil {
		return fmt.Errorf("open the image's %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("look up the image's %s: %w", dir, err)
	}
	if err := os.Mkdir(b.path(dir), fi.Mode().Perm()); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("read the image's %s: %w", dir, err)
	}
	for _, e := range entries {
		target := filepath.Join(dir, e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			dest, err := readlinkat(fd, e.Name())
			if err != nil {
				return fmt.Errorf("read link %s: %w", target, err)
			}
			if err := os.Symlink(dest, b.path(target)); err != nil {
				return fmt.Errorf("copy symlink %s: %w", target, err)
			}
		case e.IsDir() || e.Type().IsRegular():
			t, err := cloneTree(fd, e.Name(), target, roAttrs, true)
			if err != nil {
				return err
			}
			t.file = !e.IsDir()
			err = b.place(t)
			_ = unix.Close(t.fd)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// readlinkat is the target of the symlink name in directory dirfd.
func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// lexists reports whether p names anything (a dangling symlink too).
func lexists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
