package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// stage is where the new root is assembled before the switch onto it
// (pivot_root, or moveRoot from the spawner's skeleton). Everything the
// jail needs from the host is cloned into detached mounts first, so covering
// the host's /tmp here (in our private mount namespace) hides nothing we use;
// in the skeleton it is an empty directory.
const stage = "/tmp"

// Mount attributes. Binds are built with open_tree + mount_setattr +
// move_mount: mount_setattr only adds restrictions, so flags the kernel locked
// when it copied the host's mounts into our user namespace are kept without
// reading mountinfo, and AT_RECURSIVE covers submounts.
const (
	roAttrs    = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	rwAttrs    = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	runAttrs   = roAttrs | unix.MOUNT_ATTR_NOEXEC // the driver's sockets: nothing in the jail writes there
	deviceAttr = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
)

// devices are bound from the host's /dev; a user namespace cannot mknod.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// Setup builds the jail inside the namespaces Start created: a read-only root
// on a tmpfs made of system binds, /etc with a synthesised passwd and group,
// writable /workspace, /tmp, /dev/shm and outputs, a read-only
// /run/boxkite (the driver's egress socket), a fresh
// /proc with the dangerous files masked, a minimal /dev, then the switch
// onto it (pivot_root, or from the spawner's skeleton MS_MOVE and chroot:
// skeleton_linux.go), the hostname and loopback. It must run in init (PID 1 of the new PID
// namespace) while it still has every capability of its user namespace.
func Setup(l Launch) error {
	s := l.Spec.withDefaults()
	// The usual 022, whatever the umask of the server that started us: a
	// hardened host's 077 made /dev 0700, closed to the sandbox's user,
	// and its commands' files private.
	unix.Umask(0o022)
	// Init is in the sandbox's cgroups by now (its clone placed it, or
	// Start moved it); a cgroup namespace rooted there hides the host's
	// cgroup paths. Its clone entered one once placed (l.CgroupNS); else
	// a fresh one, on this thread only (ShareCgroupNamespace moves the
	// others), as the clone's own is rooted at the caller's cgroup.
	if !l.CgroupNS {
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			return fmt.Errorf("enter cgroup namespace: %w", err)
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	b := &builder{root: stage, spec: s, devNull: -1, skeleton: inSkeletonRoot()}
	defer b.closeAll()
	if err := b.cloneSources(l.MountFDs); err != nil {
		return err
	}
	if err := b.mountTmpfs(b.root, unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m"); err != nil {
		return err
	}
	steps := []func() error{b.placeSystem, b.placeEtc, b.takeBinds, b.placeHostDirs, b.placeReadOnlyRoots, b.placeWorkspaceTmpfs, b.placeBinds, b.placeHome, b.placeDev, b.placeTmp, b.placeProc}
	if s.Build != nil {
		// The build's root has its own /etc; nothing else is bound.
		steps = []func() error{b.placeSystem, b.placeDev, b.placeTmp, b.placeProc}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	// From the spawner's skeleton the root moves onto it (moveRoot):
	// beneath lies the skeleton, nothing the jail lacks. Elsewhere the
	// host's root is beneath: pivot_root, and detach it.
	switchRoot := pivot
	if b.skeleton {
		switchRoot = moveRoot
	}
	if err := switchRoot(b.root); err != nil {
		return err
	}
	// Only the mounts placed writable above stay writable.
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: roAttrs}); err != nil {
		return fmt.Errorf("make root read-only: %w", err)
	}
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	if s.Build == nil { // a build shares its caller's network namespace, loopback up
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	err := limitNamespaces(b.nsLimits)
	b.nsLimits = nil
	return err
}

// A tree is a detached mount waiting to be moved into the new root.
type tree struct {
	fd     int
	target string // path inside the jail
	file   bool   // a bind of a single file (the target must be a file)
}

type builder struct {
	root    string
	spec    Spec
	system  []tree
	links   map[string]string // system paths that are symlinks → their target
	host    []tree            // workspace, run dir, outputs
	devs    []tree
	binds   []tree // Spec.Binds, placed after the workspace (binds_linux.go)
	devNull int
	// skeleton: the jail was cloned from the spawner's skeleton root
	// (skeleton_linux.go).
	skeleton bool

	nsLimits []nsLimit // the user namespace's limits, see openNamespaceLimits
}

func (b *builder) closeAll() {
	for _, ts := range [][]tree{b.system, b.host, b.devs, b.binds} {
		for _, t := range ts {
			_ = unix.Close(t.fd)
		}
	}
	if b.devNull >= 0 {
		_ = unix.Close(b.devNull)
	}
	for _, l := range b.nsLimits {
		_ = unix.Close(l.fd)
	}
}

func (b *builder) path(jailPath string) string { return filepath.Join(b.root, jailPath) }

// cloneSources takes every host path the jail needs, before anything is
// mounted over the staging directory.
func (b *builder) cloneSources(fds map[string]int) error {
	b.links = map[string]string{}
	for _, p := range b.spec.SystemBinds {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("stat %s: %w", p, err)
		case fi.Mode()&os.ModeSymlink != 0:
			dest, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("read link %s: %w", p, err)
			}
			b.links[p] = dest
			continue
		}
		t, err := cloneTree(unix.AT_FDCWD, p, p, roAttrs, true)
		if err != nil {
			return err
		}
		t.file = !fi.IsDir()
		b.system = append(b.system, t)
	}
	if b.spec.Image != "" && b.spec.Build == nil { // init runs a build's steps itself
		if err := b.cloneLoader(); err != nil {
			return err
		}
	}

	for _, d := range hostDirs(b.spec) {
		if fd, ok := fds[d.target]; ok {
			// Start cloned it already, attributes set: move it as is.
			b.host = append(b.host, tree{fd: fd, target: d.target})
			continue
		}
		t, err := cloneTree(unix.AT_FDCWD, d.source, d.target, d.attrs, d.recursive)
		if err != nil {
			return err
		}
		b.host = append(b.host, t)
	}

	for _, name := range devices {
		p := "/dev/" + name
		t, err := cloneTree(unix.AT_FDCWD, p, p, deviceAttr, false)
		if err != nil {
			return err
		}
		t.file = true
		b.devs = append(b.devs, t)
		if name == "null" {
			// A second clone masks /proc files later.
			nt, err := cloneTree(unix.AT_FDCWD, p, p, maskAttrs, false)
			if err != nil {
				return err
			}
			b.devNull = nt.fd
		}
	}
	return nil
}

// cloneTree makes a detached copy of the mount at dirfd/path with attrs set.
// An empty path means dirfd itself.
func cloneTree(dirfd int, path, target string, attrs uint64, recursive bool) (tree, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
	setFlags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
		setFlags |= unix.AT_RECURSIVE
	}
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	fd, err := unix.OpenTree(dirfd, path, flags)
	if err != nil {
		return tree{}, fmt.Errorf("clone mount for %s: %w", target, err)
	}
	if err := unix.MountSetattr(fd, "", setFlags, &unix.MountAttr{Attr_set: attrs}); err != nil {
		_ = unix.Close(fd)
		return tree{}, fmt.Errorf("set attributes of %s: %w", target, err)
	}
	return tree{fd: fd, target: target}, nil
}

// place moves t onto its target under the new root, creating the mount point.
func (b *builder) place(t tree) error {
	dst := b.path(t.target)
	if err := makeMountPoint(dst, t.file); err != nil {
		return err
	}
	if err := unix.MoveMount(t.fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount %s: %w", t.target, err)
	}
	return nil
}

func makeMountPoint(dst string, file bool) error {
	if !file {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("create mount point: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	if err := createFile(dst, 0o644); err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	return nil
}

func (b *builder) mountTmpfs(dst string, flags uintptr, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	if err := unix.Mount("tmpfs", dst, "tmpfs", flags, data); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dst, err)
	}
	return nil
}

func (b *builder) placeSystem() error {
	if b.spec.Image != "" {
		if err := b.placeImage(); err != nil {
			return err
		}
	}
	for _, t := range b.system {
		if err := b.place(t); err != nil {
			return err
		}
	}
	for p, dest := range b.links {
		if err := os.Symlink(dest, b.path(p)); err != nil {
			return fmt.Errorf("copy symlink %s: %w", p, err)
		}
	}
	return nil
}

func (b *builder) placeHostDirs() error {
	for _, t := range b.host {
		if err := b.place(t); err != nil {
			return err
		}
	}
	return nil
}

// placeReadOnlyRoots makes the typed roots the sandbox may read but not
// write (uploads and skills) as directories of the root tmpfs, which turns
// read-only after pivot_root. Without them the sidecar would call every path
// under them outside the roots rather than read-only.
func (b *builder) placeReadOnlyRoots() error {
	for _, dir := range []string{UploadsDir, SkillsDir} {
		if err := os.MkdirAll(b.path(dir), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	return nil
}

// placeWorkspaceTmpfs makes /workspace and outputs directories of one
// tmpfs of Spec.WorkspaceTmpfs bytes, so they share the quota. The tmpfs is
// staged under the new root and detached again once both are bound.
func (b *builder) placeWorkspaceTmpfs() error {
	if b.spec.WorkspaceTmpfs <= 0 {
		return nil
	}
	staging := b.path("/.workspace")
	size := strconv.FormatInt(b.spec.WorkspaceTmpfs, 10)
	if err := b.mountTmpfs(staging, unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size="+size); err != nil {
		return err
	}
	for _, target := range []string{WorkspaceDir, OutputsDir} {
		dir := filepath.Join(staging, filepath.Base(target))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", target, err)
		}
		// A nested jail maps no sandbox user; its root is what the
		// sandbox user's namespace maps to, so root's files are its own.
		if !b.spec.Nested() {
			if err := os.Chown(dir, b.spec.UID, b.spec.GID); err != nil {
				return fmt.Errorf("chown %s: %w", target, err)
			}
		}
		t, err := cloneTree(unix.AT_FDCWD, dir, target, rwAttrs, false)
		if err != nil {
			return err
		}
		err = b.place(t)
		_ = unix.Close(t.fd)
		if err != nil {
			return err
		}
	}
	if err := unix.Unmount(staging, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach workspace staging: %w", err)
	}
	if err := os.Remove(staging); err != nil {
		return fmt.Errorf("remove workspace staging: %w", err)
	}
	return nil
}

func (b *builder) placeTmp() error {
	size := strconv.FormatInt(b.spec.TmpSize, 10)
	return b.mountTmpfs(b.path("/tmp"), unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+size)
}

// imageStage is where an image's root is staged under the new root while
// its top-level directories are bound; it is detached again afterwards.
const imageStage = "/.image"

// imageSkipped are an image's top-level names the jail makes itself.
var imageSkipped = map[string]bool{"dev": true, "proc": true, "sys": true, "tmp": true, "run": true, "mnt": true, "workspace": true}

// placeImage binds each top-level directory of the image read-only (a
// build's writable) and copies its top-level symlinks (merged-/usr
// images), in place of the host's system dirs.
func (b *builder) placeImage() error {
	i := -1
	for j, t := range b.host {
		if t.target == imageStage {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("place image: no mount for %s", b.spec.Image)
	}
	t := b.host[i]
	b.host = append(b.host[:i:i], b.host[i+1:]...)
	err := b.place(t)
	_ = unix.Close(t.fd)
	if err != nil {
		return err
	}
	staged := b.path(imageStage)
	entries, err := os.ReadDir(staged)
	if err != nil {
		return fmt.Errorf("read image root: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		// A build has no run dir; its root's /run is its own scratch.
		if (imageSkipped[name] && (b.spec.Build == nil || name != "run")) || name[0] == '.' {
			continue
		}
		src := filepath.Join(staged, name)
		switch {
		case "/"+name == filepath.Dir(HomeDir) && b.spec.Build == nil &&
			(e.Type()&os.ModeSymlink != 0 || e.IsDir() && !lexists(filepath.Join(src, filepath.Base(HomeDir)))):
			if err := b.placeImageHome(staged); err != nil {
				return err
			}
		case e.Type()&os.ModeSymlink != 0:
			dest, err := os.Readlink(src)
			if err != nil {
				return fmt.Errorf("read link /%s: %w", name, err)
			}
			if err := os.Symlink(dest, b.path("/"+name)); err != nil {
				return fmt.Errorf("copy symlink /%s: %w", name, err)
			}
		case e.IsDir():
			attrs := uint64(roAttrs)
			if b.spec.Build != nil {
				attrs = rwAttrs
			}
			t, err := cloneTree(unix.AT_FDCWD, src, "/"+name, attrs, true)
			if err != nil {
				return err
			}
			err = b.place(t)
			_ = unix.Close(t.fd)
			if err != nil {
				return err
			}
		}
	}
	if err := unix.Unmount(staged, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach image staging: %w", err)
	}
	if err := os.Remove(staged); err != nil {
		return fmt.Errorf("remove image staging: %w", err)
	}
	return nil
}
