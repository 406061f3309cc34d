package faulttest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Other processes on the machine can hold this suite's filesystems: one
// that makes a mount namespace of its own (a concurrent test package's
// unshare, an image build's, a systemd service's) takes a private copy of
// every mount there is, the suite's loop-mounted volumes among them, and
// keeps it until it exits. Such a filesystem, and the loop device under
// it, outlives the unmount here, through nobody's fault in this process.
// The checks below tell those holders from the suite's own.

// A holder is a process keeping a filesystem of interest busy.
type holder struct {
	pid  int
	what string // what it holds, for the report
	ours bool   // this test process, a process it started, or one ours says is
}

func (h holder) String() string {
	if h.pid == 0 {
		return h.what
	}
	return fmt.Sprintf("pid %d (%s) %s", h.pid, cmdline(h.pid), h.what)
}

// loopDevicesUnder maps the loop devices whose backing file is below dir
// ("major:minor" of each) to their names and backing files.
func loopDevicesUnder(dir string) map[string]string {
	out := map[string]string{}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		backing, err := os.ReadFile(f)
		if err != nil || !strings.HasPrefix(string(backing), dir+"/") {
			continue
		}
		sys := filepath.Dir(filepath.Dir(f))
		dev, _ := os.ReadFile(filepath.Join(sys, "dev"))
		out[strings.TrimSpace(string(dev))] = filepath.Base(sys) + " backed by " + strings.TrimSpace(string(backing))
	}
	return out
}

// holdersOf lists the processes that keep a filesystem on one of devs
// ("major:minor") busy: a mount of it in their mount namespace (one per
// namespace; threads count, a thread may have a namespace of its own), a
// descriptor or working directory on it, or the device itself open.
// A mount at skip is left out (the filesystem being unmounted itself);
// ours says whether a process other than this one and its descendants
// belongs to the test.
func holdersOf(devs map[string]bool, skip string, ours func(pid int) bool) []holder {
	isOurs := func(pid int) bool { return descendant(pid) || (ours != nil && ours(pid)) }
	var out []holder
	seen := map[string]bool{}
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	for _, task := range tasks {
		ns, err := os.Readlink(filepath.Join(task, "ns", "mnt"))
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		pid, _ := strconv.Atoi(strings.Split(task, "/")[2])
		for _, m := range mountsOf(filepath.Join(task, "mountinfo"), devs) {
			if m == skip {
				continue
			}
			out = append(out, holder{pid: pid, what: "mounts " + m + " in mount namespace " + ns, ours: isOurs(pid)})
		}
	}
	links, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, p := range []string{"cwd", "root"} {
		more, _ := filepath.Glob("/proc/[0-9]*/" + p)
		links = append(links, more...)
	}
	for _, l := range links {
		var st unix.Stat_t
		if unix.Stat(l, &st) != nil {
			continue
		}
		dev := st.Dev
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			dev = st.Rdev
		}
		if !devs[fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))] {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(l, "/")[2])
		target, _ := os.Readlink(l)
		out = append(out, holder{pid: pid, what: "holds " + target, ours: isOurs(pid)})
	}
	return out
}

// mountsOf returns the mount points of devs in a mountinfo file.
func mountsOf(mountinfo string, devs map[string]bool) []string {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && devs[fields[2]] {
			out = append(out, fields[4])
		}
	}
	return out
}

// descendant reports whether pid is this process or one it started
// (directly or not).
func descendant(pid int) bool {
	self := os.Getpid()
	for range 64 {
		if pid == self {
			return true
		}
		if pid <= 1 {
			return false
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return false
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// onlyForeign reports whether hs is not empty and none of it is the test's.
func onlyForeign(hs []holder) bool {
	for _, h := range hs {
		if h.ours {
			return false
		}
	}
	return len(hs) > 0
}

// detachedPinners lists the processes that keep a detached copy of mounts
// alive: a descriptor or a mapped file on a mount that no mount namespace
// shows. A jail that holds such a copy from before it pivoted (a
// dynamically linked sidecar's loader, say: see server/local
// TestJailsDoNotPinHostMounts) keeps every filesystem the host had
// mounted when it started, and no mount table shows it. This suite's
// sidecars are built so they hold none; other processes on the machine
// may. ours says which processes belong to the test, as for holdersOf.
func detachedPinners(ours func(pid int) bool) []holder {
	visible := map[string]bool{} // mount ids some namespace shows
	seen := map[string]bool{}
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	for _, task := range tasks {
		ns, err := os.Readlink(filepath.Join(task, "ns", "mnt"))
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		for _, line := range strings.Split(readString(filepath.Join(task, "mountinfo")), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				visible[f[0]] = true
			}
		}
	}
	self := os.Getpid()
	var out []holder
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		if pid == self {
			continue
		}
		if id, what := detachedRef(p, visible); id != "" {
			out = append(out, holder{pid: pid, what: fmt.Sprintf("keeps a detached copy of mounts alive (mount %s, through %s)", id, what), ours: descendant(pid) || (ours != nil && ours(pid))})
		}
	}
	return out
}

// detachedRef returns the id of a mount no namespace shows that process
// dir (/proc/PID) holds a file on, through a descriptor or a mapping, and
// which file; "" if none. Files of the kernel's internal mounts (pipes,
// sockets, anonymous inodes, memfds, shared memory) are no such thing.
func detachedRef(dir string, visible map[string]bool) (id, what string) {
	internal := func(target string) bool {
		if !strings.HasPrefix(target, "/") {
			return true // pipe:[…], socket:[…], anon_inode:…
		}
		for _, p := range []string{"/memfd:", "/SYSV", "/dev/zero", "/["} {
			if strings.HasPrefix(target, p) {
				return true
			}
		}
		return false
	}
	infos, _ := filepath.Glob(filepath.Join(dir, "fdinfo", "*"))
	for _, info := range infos {
		target, _ := os.Readlink(filepath.Join(dir, "fd", filepath.Base(info)))
		if internal(target) {
			continue
		}
		if id := mntID(readString(info)); id != "" && !visible[id] {
			return id, target
		}
	}
	maps, _ := filepath.Glob(filepath.Join(dir, "map_files", "*"))
	for _, m := range maps {
		target, _ := os.Readlink(m)
		if internal(target) {
			continue
		}
		fd, err := unix.Open(m, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		id := mntID(readString("/proc/self/fdinfo/" + strconv.Itoa(fd)))
		_ = unix.Close(fd)
		if id != "" && !visible[id] {
			return id, "a mapping of " + target
		}
	}
	return "", ""
}

// mntID is the mnt_id line of an fdinfo file.
func mntID(fdinfo string) string {
	for _, line := range strings.Split(fdinfo, "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readString(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
