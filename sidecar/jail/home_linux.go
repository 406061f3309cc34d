package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// placeHome makes HomeDir the workspace: a symlink to it in the root
// tmpfs, or, when the image has a /home/user directory of its own, the
// workspace bound over it (with the mounts below it). An image whose
// /home holds no user directory keeps its /home as it is: the image's
// tree is read-only, with no place for the link.
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
