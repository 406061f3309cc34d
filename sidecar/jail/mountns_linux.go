package jail

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The spawner's helper runs in a mount namespace of its own (Spawner's
// helper starts it with CLONE_NEWNS, made private), trimmed at its start
// to the mounts it reaches by path: trimMounts. Its jails are not cloned
// from it but from the skeleton namespace it makes next
// (skeleton_linux.go), a copy of this trimmed one that keeps only the
// skeleton.
//
// Why (issue 27): a jail's clone copied its parent's mount namespace
// whole (copy_mnt_ns, every mount), and the jail's pivot_root then
// detached that copy again (umount_tree, and each mount's release on the
// way out), so in the host's namespace a jail's start cost CPU in
// proportion to the host's mounts, and each sandbox added its disk's mount:
// with 2,000 more mounts a cold create cost about 5 ms more CPU here
// (bench/issue27/session18-cpu27.md). A private namespace also stops
// mounts made later (the sandboxes' disks, volumes) from reaching the
// helper.
//
// What the helper reaches by path: the system binds
// (DefaultSystemBinds, recursively) and the device nodes of /dev, which
// it binds into the skeleton, a fully visible /proc (the jails' id maps,
// their network namespaces; a new procfs mount needs one too), /sys (the
// cgroups of each request), the stage directory, and the binary it runs.
// Everything else of a root driver's jail (the run dir, the workspace, the
// outputs, volumes, an image) comes as a detached mount from the caller
// (detachHostDirs), and the helper only serves root drivers' jails that
// are not builds. So the helper keeps the mounts at or below those trees
// and the mounts on the way to those paths, and detaches the rest: among
// them every sandbox's disk and the clone pool that existed when it
// started, which its copy would otherwise hold (a loop device is freed
// only once its filesystem is unmounted in every namespace).

// spawnerKeepTrees are the trees whose mounts the helper keeps whole,
// each also where it resolves to (a system directory may be a link).
func spawnerKeepTrees() []string {
	return withResolved(append(DefaultSystemBinds(), "/proc", "/dev", "/sys"))
}

// trimMounts detaches, in the calling process's mount namespace, every
// mount that is neither at or below one of trees nor on the way to one of
// paths (its mount point is the path or one of its parents). It must run
// in a private namespace of the process's own: it never touches the
// host's. Mounts are detached deepest first, so each detach is of a mount
// without children; one already gone with its parent is no error.
func trimMounts(trees, paths []string) error {
	points, err := mountPoints("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range slices.Backward(points) {
		if keepMount(p, trees, paths) {
			continue
		}
		err := unix.Unmount(p, unix.MNT_DETACH)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("detach %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// keepMount reports whether the mount at point stays: at or below one of
// trees, or on the way to one of paths.
func keepMount(point string, trees, paths []string) bool {
	for _, t := range trees {
		if within(point, t) {
			return true
		}
	}
	for _, p := range paths {
		if within(p, point) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or below it; both are clean and
// absolute.
func within(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}

// mountPoints lists the mount points of a mountinfo file in its order
// (parents before their children), unescaped.
func mountPoints(mountinfo string) ([]string, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		out = append(out, filepath.Clean(unescapeMount(fields[4])))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	return out, nil
}

// spawnerPaths are the paths whose mounts the helper keeps the way to:
// its own binary (what the caller's jails execute, Spawner.path), its
// running one, and the stage Setup builds the root on, each also where it
// resolves to.
func spawnerPaths(self string) []string {
	paths := []string{stage, "/proc/self/exe"}
	if self != "" {
		paths = append(paths, self)
	}
	return withResolved(paths)
}

// withResolved returns paths, made absolute, and after them where each
// resolves to, when that differs.
func withResolved(paths []string) []string {
	out := make([]string, 0, 2*len(paths))
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
		if resolved, err := filepath.EvalSymlinks(p); err == nil && !slices.Contains(out, resolved) {
			out = append(out, resolved)
		}
	}
	return out
}
