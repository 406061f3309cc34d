package local

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A filesystem whose mount the driver took away can still be mounted in
// another mount namespace: a process that made its own (unshare -m, a
// systemd service with PrivateTmp, a container started meanwhile) took a
// copy of the host's mounts, the driver's among them, and holds them
// until it exits. The loop device under such a filesystem cannot detach,
// and nothing the driver does in its own namespace changes that, so
// Cleanup names the process and the command that lets go of the copy.

// A nsMount is a mount of a filesystem in another mount namespace, seen
// through one of its processes.
type nsMount struct {
	pid        int    // a process in that namespace
	comm       string // its name
	mountPoint string // where the namespace mounts the filesystem
}

// mountsElsewhere lists, once per mount namespace other than this
// process's, where a filesystem on the block device dev ("major:minor")
// is mounted. Threads count: a thread may have a namespace of its own.
func mountsElsewhere(dev string) []nsMount {
	self, _ := os.Readlink("/proc/self/ns/mnt")
	seen := map[string]bool{self: true}
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	var out []nsMount
	for _, task := range tasks {
		ns, err := os.Readlink(filepath.Join(task, "ns", "mnt"))
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		mp := mountPointOf(filepath.Join(task, "mountinfo"), dev)
		if mp == "" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(task))))
		comm, _ := os.ReadFile(filepath.Join(task, "comm"))
		out = append(out, nsMount{pid: pid, comm: strings.TrimSpace(string(comm)), mountPoint: mp})
	}
	return out
}

// mountPointOf returns the first mount point of device dev in the
// mountinfo file at path, or "".
func mountPointOf(path, dev string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[2] == dev {
			return unescapeMount(fields[4])
		}
	}
	return ""
}

// loopLeftover is the Leftover of a loop device still attached to an
// image below the state directory. With explain, one held by another
// mount namespace says so: the first one found is named, with the
// command that unmounts its copy.
func loopLeftover(l loopDevice, explain bool) Leftover {
	what := l.dev + " backed by " + l.file
	if !explain {
		return Leftover{Kind: "loop_device", What: what, Remove: "losetup -d " + l.dev}
	}
	b, _ := os.ReadFile(filepath.Join("/sys/block", filepath.Base(l.dev), "dev"))
	if held := mountsElsewhere(strings.TrimSpace(string(b))); len(held) > 0 {
		h := held[0]
		what += fmt.Sprintf(": its filesystem is still mounted at %s in the mount namespace of pid %d (%s)", h.mountPoint, h.pid, h.comm)
		if len(held) > 1 {
			what += fmt.Sprintf(" and %d more", len(held)-1)
		}
		return Leftover{Kind: "loop_device", What: what, Remove: fmt.Sprintf("nsenter -t %d -m umount -l %s", h.pid, h.mountPoint)}
	}
	return Leftover{Kind: "loop_device", What: what, Remove: "losetup -d " + l.dev}
}

// checkSidecarStatic warns when the sidecar binary is dynamically linked
// (built with cgo). A jail's init starts in a copy of the host's mount
// namespace, and the kernel maps a dynamic binary's ELF interpreter (and
// the interpreter the C library) through that copy before the jail
// pivots out of it; those mappings keep the whole copy alive for as long
// as the jail runs, and with it every filesystem the host had mounted
// when the jail started: a deleted sandbox's disk and loop device, an
// unmounted volume, stay until every jail started meanwhile has ended
// (TestJailsDoNotPinHostMounts). Release builds are static.
func (d *Driver) checkSidecarStatic() {
	f, err := elf.Open(d.sidecar)
	if err != nil {
		return // not ELF, or unreadable: starting it will say
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			d.log.Warn("the sidecar is dynamically linked: each jail keeps the host's mounts of when it started (deleted sandboxes' disks, unmounted volumes) alive until it ends; build it with CGO_ENABLED=0, as releases are",
				"sidecar", d.sidecar)
			return
		}
	}
}
