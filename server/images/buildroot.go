//go:build linux

package images

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// A build's root is assembled on the build's locked thread, in the mount
// namespace it made its own, so every mount below goes when the thread
// does. The jail (jail.Build) copies that namespace and binds the root's
// top-level directories writable:
//
//	build/stage/            a private tmpfs holding the rest
//	build/stage/img/        the image's directory, idmapped
//	build/stage/lower/KEY/  the host's /NAME, idmapped and read-only
//	build/stage/root/       a tmpfs owned by the jail's root: the build's /
//	build/stage/root/NAME/  overlay: lower [mask/KEY:] lower/KEY, upper img/upper/KEY
//
// Idmapping (jail.IDMappedClone) through a namespace mapping ids the way
// the jail does makes the host's root-owned system files the jail root's
// own, so dpkg may replace them, and stores what the build writes with
// the ids it has inside the jail: the image is owned by canonical ids,
// the same whatever range a sandbox booting it maps. The overlays are
// mounted with the jail root's host id as the filesystem uid, because
// overlayfs copies up with its mounter's credentials and those must map
// through the idmapped upper layer.

// maskedDirs are the lower layers a mask hides secrets of (maskLayer):
// /etc and the package managers' state, small trees where the host keeps
// shadow passwords, host keys and debconf's passwords.
var maskedDirs = map[string]bool{"etc": true, "var/lib/dpkg": true, "var/lib/apt": true, "var/cache/apt": true, "var/cache/debconf": true}

// scratchDirs are plain directories of the build's root that the image
// does not keep (logs, temporary files).
var scratchDirs = []string{"var", "var/lib", "var/cache", "var/log", "var/tmp", "run", "run/lock"}

// assembleRoot makes the build's root for a jail whose root is host id
// hostID and returns its path. The calling thread must be locked, in a
// private mount namespace.
func (m *Manager) assembleRoot(id string, hostID int) (string, error) {
	stage := m.path(id, "build/stage")
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return "", fmt.Errorf("create build stage: %w", err)
	}
	userns, err := jail.MappingUserNS(hostID)
	if err != nil {
		return "", err
	}
	defer userns.Close()
	// The image's directory is cloned before anything is mounted below
	// it, so the clone holds none of the stage.
	img, err := jail.IDMappedClone(m.path(id, ""), userns, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false)
	if err != nil {
		return "", err
	}
	defer unix.Close(img)
	if err := unix.Mount("tmpfs", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return "", fmt.Errorf("mount build stage: %w", err)
	}
	if err := attach(img, filepath.Join(stage, "img")); err != nil {
		return "", err
	}
	root := filepath.Join(stage, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		return "", fmt.Errorf("create build root: %w", err)
	}
	opts := "mode=0755,uid=" + strconv.Itoa(hostID) + ",gid=" + strconv.Itoa(hostID)
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("mount build root: %w", err)
	}
	for _, d := range scratchDirs {
		p := filepath.Join(root, d)
		if err := os.Mkdir(p, 0o755); err != nil {
			return "", fmt.Errorf("create /%s: %w", d, err)
		}
		if err := os.Lchown(p, hostID, hostID); err != nil {
			return "", fmt.Errorf("create /%s: %w", d, err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "var/tmp"), 0o1777); err != nil {
		return "", fmt.Errorf("create /var/tmp: %w", err)
	}
	for _, name := range append(append([]string{}, systemDirs...), stateDirs...) {
		if err := m.layer(id, name, stage, userns, hostID); err != nil {
			return "", err
		}
	}
	return root, nil
}

// layer places the host's /name in the build's root: a copied symlink,
// nothing when the host lacks it, else an overlay of the image's upper
// dir over the host's directory (and its mask, for maskedDirs).
func (m *Manager) layer(id, name, stage string, userns *os.File, hostID int) error {
	dst := filepath.Join(stage, "root", name)
	fi, err := os.Lstat("/" + name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("stat /%s: %w", name, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		dest, err := os.Readlink("/" + name)
		if err != nil {
			return fmt.Errorf("read link /%s: %w", name, err)
		}
		return os.Symlink(dest, dst)
	case !fi.IsDir():
		return nil
	}
	key := strings.ReplaceAll(name, "/", "-")
	lower := filepath.Join(stage, "lower", key)
	fd, err := jail.IDMappedClone("/"+name, userns, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, true)
	if err != nil {
		return err
	}
	err = attach(fd, lower)
	_ = unix.Close(fd)
	if err != nil {
		return err
	}
	lowers := lower
	if maskedDirs[name] {
		if err := maskLayer("/"+name, m.path(id, "build/mask/"+key)); err != nil {
			return err
		}
		lowers = filepath.Join(stage, "img/build/mask", key) + ":" + lowers
	}
	if name == "etc" && m.sources.AptDir != "" && filepath.Clean(m.sources.AptDir) != "/etc/apt" {
		if err := aptLayer(m.sources.AptDir, m.path(id, "build/aptconf")); err != nil {
			return err
		}
		lowers = filepath.Join(stage, "img/build/aptconf") + ":" + lowers
	}
	for _, d := range []string{m.path(id, "upper/"+key), m.path(id, "build/work/"+key)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create /%s: %w", name, err)
	}
	opts := "lowerdir=" + lowers +
		",upperdir=" + filepath.Join(stage, "img/upper", key) +
		",workdir=" + filepath.Join(stage, "img/build/work", key)
	return asFSUser(hostID, func() error {
		if err := unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mount overlay of /%s: %w", name, err)
		}
		return nil
	})
}

// attach moves the detached mount fd to dir, creating it.
func attach(fd int, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount %s: %w", dir, err)
	}
	return nil
}

// asFSUser runs fn with the calling (locked) thread's filesystem uid and
// gid set to id and every permitted capability effective (changing the
// filesystem uid drops the file ones), then restores root's.
func asFSUser(id int, fn func() error) error {
	raise := func() error {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return err
		}
		for i := range data {
			data[i].Effective = data[i].Permitted
		}
		return unix.Capset(&hdr, &data[0])
	}
	set := func(id int) error {
		if err := unix.Setfsgid(id); err != nil {
			return err
		}
		if err := unix.Setfsuid(id); err != nil {
			return err
		}
		return raise()
	}
	if err := set(id); err != nil {
		return fmt.Errorf("switch filesystem ids: %w", err)
	}
	err := fn()
	if rerr := set(0); rerr != nil {
		// The thread is the build's and dies with it; say why it failed.
		return errors.Join(err, fmt.Errorf("restore filesystem ids: %w", rerr))
	}
	return err
}

// maskLayer makes dir an overlay layer hiding whatever of the host's src
// only root may read: each file or directory whose mode denies others
// reading (or, for a directory, searching) becomes a whiteout, under
// directories copying the host's modes and owners. In sandboxes the
// host's root is unmapped and those stay closed; in a build, whose
// idmapped lower layers make root's files the jail root's own, this keeps
// them closed to package scripts all the same (shadow, gshadow, SSH host
// keys, ssl/private, debconf's passwords).
func maskLayer(src, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create mask of %s: %w", src, err)
	}
	if err := copyDirAttrs(src, dir); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == src {
				return err
			}
			return nil // vanished or unreadable: nothing to hide that we can see
		}
		if p == src || e.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		closed := fi.Mode().Perm()&0o004 == 0
		if fi.IsDir() {
			closed = fi.Mode().Perm()&0o005 != 0o005
		}
		if !closed {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if err := mirrorParents(src, dir, filepath.Dir(rel)); err != nil {
			return err
		}
		// A whiteout is a character device 0/0.
		if err := unix.Mknod(filepath.Join(dir, rel), unix.S_IFCHR, 0); err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
		if fi.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
}

// mirrorParents makes dir/rel and its parents as the directories of
// src/rel are: mode and owner, which overlayfs shows for a merged
// directory from its topmost layer.
func mirrorParents(src, dir, rel string) error {
	if rel == "." {
		return nil
	}
	if err := mirrorParents(src, dir, filepath.Dir(rel)); err != nil {
		return err
	}
	dst := filepath.Join(dir, rel)
	if err := os.Mkdir(dst, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create mask dir: %w", err)
	}
	return copyDirAttrs(filepath.Join(src, rel), dst)
}

func copyDirAttrs(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("mask %s: %w", src, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("mask %s: no owner", src)
	}
	if err := os.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("mask %s: %w", src, err)
	}
	if err := os.Chmod(dst, fi.Mode().Perm()|fi.Mode()&(fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return fmt.Errorf("mask %s: %w", src, err)
	}
	return nil
}

// aptLayer makes dir an overlay layer for /etc whose apt/ is a copy of the
// apt configuration src, opaque, so the build's apt uses exactly the
// sources its grants were read from (Sources.AptDir) instead of the
// host's. The image keeps the host's /etc/apt: the layer is the build's
// only.
func aptLayer(src, dir string) error {
	dst := filepath.Join(dir, "apt")
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(to, 0o755)
		case e.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		case e.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
		return nil // sockets, devices: nothing apt reads
	})
	if err == nil {
		err = unix.Setxattr(dst, "trusted.overlay.opaque", []byte("y"), 0)
	}
	if err != nil {
		return fmt.Errorf("copy apt configuration %s: %w", src, err)
	}
	return nil
}
