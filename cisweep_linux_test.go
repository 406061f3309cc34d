package boxkite_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sweepBlockEnv makes TestCISweep's binary, started as one of the fake
// boxkite processes, block until it is killed.
const sweepBlockEnv = "BOXKITE_TEST_SWEEP_BLOCK"

// TestCISweep runs .ci/sweep, which .ci/run calls after the tests, against
// a checkout of its own. The processes named as boxkite's binaries that
// were started from it (the executable in it, the working directory in it,
// PWD in it, as go test sets PWD for a package) are ended, and so is a jail
// of a server of the checkout's (its executable in the server's --sidecar
// directory); as root, the mounts in that server's --state-dir are
// unmounted. A server of a sibling checkout whose path begins with the
// checkout's, its mount, and a process of another name started from the
// checkout are left alone.
func TestCISweep(t *testing.T) {
	if os.Getenv(sweepBlockEnv) == "1" {
		for { // until killed; a bare select{} is a deadlock the runtime ends
			time.Sleep(time.Hour)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	clone := filepath.Join(root, "clone")
	sibling := filepath.Join(root, "clone2")
	jails := filepath.Join(root, "jails")
	ownState, otherState := filepath.Join(root, "state"), filepath.Join(root, "state2")
	for _, d := range []string{clone + "/bin", clone + "/pkg", sibling + "/bin", jails, ownState + "/cow", otherState + "/cow"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := func(dir, name string) string {
		p := filepath.Join(dir, name)
		copyFile(t, self, p)
		return p
	}
	server, sidecar := bin(clone+"/bin", "boxkite-server"), bin(jails, "boxkite-sidecar")
	otherServer, otherSidecar := bin(sibling+"/bin", "boxkite-server"), bin(sibling+"/bin", "boxkite-sidecar")
	otherName := bin(sibling+"/bin", "boxkite-helper")

	type proc struct {
		name     string
		path     string
		args     []string
		dir, pwd string
		ours     bool
	}
	procs := []proc{
		{name: "executable in the checkout", path: server, args: []string{"--state-dir", ownState, "--sidecar", sidecar}, dir: sibling, pwd: sibling, ours: true},
		{name: "a jail of the checkout's server", path: sidecar, args: []string{"init"}, dir: "/", pwd: "/", ours: true},
		{name: "working directory in the checkout", path: otherSidecar, dir: clone + "/pkg", pwd: sibling, ours: true},
		{name: "PWD in the checkout", path: otherSidecar, dir: root, pwd: clone + "/pkg", ours: true},
		{name: "the sibling's", path: otherServer, args: []string{"--state-dir", otherState}, dir: sibling, pwd: sibling},
		{name: "another name", path: otherName, dir: clone, pwd: clone},
	}
	cmds := make([]*exec.Cmd, len(procs))
	done := make([]chan struct{}, len(procs))
	for i, p := range procs {
		cmd := exec.Command(p.path, append([]string{"-test.run=^TestCISweep$", "--"}, p.args...)...)
		cmd.Dir = p.dir
		cmd.Env = []string{"PWD=" + p.pwd, sweepBlockEnv + "=1"}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i], done[i] = cmd, make(chan struct{})
		go func() { _ = cmd.Wait(); close(done[i]) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-done[i] })
	}
	// As root, mounts: two in the checkout's server's state directory (one
	// inside the other), one in the sibling's.
	ownMounts := []string{ownState + "/cow", ownState + "/cow/disk"}
	otherMount := otherState + "/cow"
	mounted := os.Geteuid() == 0
	if mounted {
		for _, m := range []string{ownMounts[0], otherMount, ownMounts[1]} {
			if err := os.MkdirAll(m, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", m, "tmpfs", 0, "size=64k"); err != nil {
				t.Fatalf("mount a tmpfs on %s: %v", m, err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(m, syscall.MNT_DETACH) })
		}
	}

	out, err := exec.Command("bash", ".ci/sweep", clone).CombinedOutput()
	if err != nil {
		t.Fatalf(".ci/sweep: %v\n%s", err, out)
	}
	// The sweep names every process it signals. Ours are waited for, which
	// gives a wrongful signal to the others time to land.
	signaled := map[int]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "sweep:" && f[1] == "killing" {
			pid, _ := strconv.Atoi(f[2])
			signaled[pid] = true
		}
		if len(f) >= 4 && f[0] == "sweep:" && f[1] == "stopping" {
			pid, _ := strconv.Atoi(f[3])
			signaled[pid] = true
		}
	}
	for i, p := range procs {
		if p.ours && !signaled[cmds[i].Process.Pid] {
			t.Errorf("%s (%s in %s) was not ended; it is the checkout's\n%s", p.name, p.path, p.dir, out)
		}
		if p.ours && signaled[cmds[i].Process.Pid] {
			<-done[i]
		}
	}
	for i, p := range procs {
		if p.ours {
			continue
		}
		select {
		case <-done[i]:
			t.Errorf("%s (%s in %s) was ended; it is not the checkout's\n%s", p.name, p.path, p.dir, out)
		default:
			if signaled[cmds[i].Process.Pid] {
				t.Errorf("%s (%s in %s) was signaled; it is not the checkout's\n%s", p.name, p.path, p.dir, out)
			}
		}
	}
	if mounted {
		for _, m := range ownMounts {
			if isMountPoint(t, m) {
				t.Errorf("%s is still mounted; it is in the checkout's server's state directory\n%s", m, out)
			}
		}
		if !isMountPoint(t, otherMount) {
			t.Errorf("%s was unmounted; it is the sibling's\n%s", otherMount, out)
		}
	}
}

// isMountPoint reports whether dir is a mount point (on another device
// than its parent); one that is gone is not.
func isMountPoint(t *testing.T, dir string) bool {
	t.Helper()
	var st, parent syscall.Stat_t
	if err := syscall.Stat(dir, &st); errors.Is(err, fs.ErrNotExist) {
		return false
	} else if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(filepath.Dir(dir), &parent); err != nil {
		t.Fatal(err)
	}
	return st.Dev != parent.Dev
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	o, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
}
