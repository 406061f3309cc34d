package jail

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A jail's clone places the jail in its cgroup itself (issue 27, items 1a
// and 3; bench/issue27/session25-selfplace.md). Cgroup.Add, a pid written
// to cgroup.procs of each hierarchy after the clone, takes the kernel's
// global cgroup_threadgroup_rwsem for writing each time, which on a kernel
// in its default mode waits for an RCU grace period when no other writer
// came within one (7.8-9.0 ms each at load ~26; five hierarchies on a
// hybrid host). Instead:
//
//   - cgroup2 (a pure v2 host's only hierarchy, a hybrid host's
//     controller-less one): clone3 with CLONE_INTO_CGROUP and the
//     directory's descriptor. The fork takes the rwsem's read side only,
//     as every fork does, and the child is in the cgroup from its first
//     instruction, its pids limit included.
//   - v1 hierarchies: the child writes "0" to each one's tasks file as its
//     first step, while it is still single-threaded: pid 0 through tasks
//     moves one thread, the writer, and takes no threadgroup lock at all
//     (cgroup_procs_write_start: CGRP_ATTACH_LOCK_NONE). The files are
//     opened before the clone by a root thread, never by the namespace's
//     owner (asOwner), because v1 checks the opener's credentials
//     (__cgroup1_procs_write: of->file->f_cred, Linux 5.16), not the
//     child's, which in its new user namespace is nobody. It goes first,
//     before the id maps, because nothing it needs waits for them: the
//     whole of the child's start then runs in its cgroups.
//
// A kernel or a seccomp filter that refuses clone3 (ENOSYS, E2BIG, or
// EINVAL for a descriptor 0: clone3Refused; a container runtime's default
// profile answers ENOSYS) is
// remembered, and the cgroup2 directory gets a cgroup.procs descriptor
// the child writes "0" to as to the v1 ones: a threadgroup move, which
// takes the global lock as Add did, with the open-time credentials and
// cgroup namespace (5.16) that let the child write it.
//
// The descriptors are close-on-exec: they never reach the jail's init.
// Builds and nested jails keep Cgroup.Add (start): a build's clone is
// os/exec's, and a nested jail's driver is not root.

// noClone3 is set once clone3 was refused: later clones use clone.
var noClone3 atomic.Bool

// A cgroupPlace is what a jail's clone needs to start in its cgroup.
type cgroupPlace struct {
	write []int // tasks (v1) or cgroup.procs (cgroup2 without clone3), each to get "0" from the child
	dir   int   // the cgroup2 directory (O_PATH) for CLONE_INTO_CGROUP, or -1
}

// openCgroupPlace opens the descriptors for a jail's clone to start in the
// cgroup made of dirs (Cgroup.Dirs). Call it as root, before asOwner.
func openCgroupPlace(dirs []string) (_ *cgroupPlace, err error) {
	p := &cgroupPlace{dir: -1}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	for _, dir := range dirs {
		// Never a path that is not a sandbox cgroup (Cgroup.Remove's check).
		if !isSandboxCgroup(dir) {
			return nil, fmt.Errorf("place jail in cgroup: %s is not a boxkite cgroup", dir)
		}
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("place jail in cgroup %s: %w", dir, err)
		}
		var fs unix.Statfs_t
		if err := unix.Fstatfs(fd, &fs); err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("place jail in cgroup %s: %w", dir, err)
		}
		if fs.Type == unix.CGROUP2_SUPER_MAGIC && p.dir < 0 {
			p.dir = fd
			continue
		}
		if fs.Type != unix.CGROUP_SUPER_MAGIC {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("place jail in cgroup %s: not a cgroup v1 directory, nor the only cgroup2 one", dir)
		}
		tasks, err := unix.Openat(fd, "tasks", unix.O_WRONLY|unix.O_CLOEXEC, 0)
		_ = unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("place jail in cgroup %s: %w", dir, err)
		}
		p.write = append(p.write, tasks)
	}
	if p.dir >= 0 && noClone3.Load() {
		if err := p.procsFallback(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// procsFallback opens the cgroup2 directory's cgroup.procs for the child
// to write, when clone3 cannot place it, and drops the directory.
func (p *cgroupPlace) procsFallback() error {
	fd, err := unix.Openat(p.dir, "cgroup.procs", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("place jail in cgroup: %w", err)
	}
	_ = unix.Close(p.dir)
	p.dir = -1
	p.write = append(p.write, fd)
	return nil
}

// close closes the descriptors; a nil place may be closed.
func (p *cgroupPlace) close() {
	if p == nil {
		return
	}
	closeFDs(p.write)
	if p.dir >= 0 {
		_ = unix.Close(p.dir)
	}
	p.write, p.dir = nil, -1
}

// clone3Refused reports whether clone3's errno, for a clone into the
// cgroup2 directory descriptor cgroupFD, says the kernel (or a seccomp
// filter) does not offer clone3 with CLONE_INTO_CGROUP, and so never
// will in this process: ENOSYS (no clone3, or a container runtime's
// filter), E2BIG (a kernel before 5.7, whose struct clone_args ends
// before the cgroup field, finds it non-zero: copy_struct_from_user in
// copy_clone_args_from_user), and EINVAL only when cgroupFD is 0: then
// that check passes and the older kernel's clone3_args_valid rejects the
// flag it does not know. Any other EINVAL comes from a kernel that has
// CLONE_INTO_CGROUP (its argument checks, copy_process's flag rules) and
// is this clone's error, not a reason to stop using clone3.
func clone3Refused(errno error, cgroupFD uint64) bool {
	switch {
	case errors.Is(errno, unix.ENOSYS), errors.Is(errno, unix.E2BIG):
		return true
	case errors.Is(errno, unix.EINVAL):
		return cgroupFD == 0
	}
	return false
}

// placesItself reports whether the clone of spec's jail places it in its
// cgroup (forkJail); a build's or a nested jail's is moved by Start.
func placesItself(spec Spec) bool { return spec.Build == nil && !spec.Nested() }
