//go:build linux

package local

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// A probe runs one command inside a sandbox and says what must come of it.
type probe struct {
	name    string
	command string
	ok      bool                // exit code 0 wanted (else non-zero)
	stdout  func(string) string // "" when stdout is acceptable, else why not
	after   func(t *testing.T)  // checks on the host afterwards
}

// isolationProbes check the jail's shape from inside; internal/securitytest
// attacks it through the whole server.
func isolationProbes(stateDir, workspace string, port int) []probe {
	is := func(want string) func(string) string {
		return func(got string) string {
			if strings.TrimSpace(got) != want {
				return fmt.Sprintf("stdout %q, want %q", got, want)
			}
			return ""
		}
	}
	return []probe{
		{name: "runs as the sandbox user", command: "id -u; id -g", ok: true, stdout: is("1001\n1001")},
		{name: "hostname", command: "hostname", ok: true, stdout: is(jail.DefaultHostname)},
		{name: "sees only its own processes", command: "ps -e -o comm=", ok: true, stdout: func(got string) string {
			procs := strings.Fields(got)
			// One process per jail: the static sidecar is its init too.
			// A plain command runs without sh (sidecar/direct.go).
			want := []string{"boxkite-sidecar", "ps"}
			if diff := cmp.Diff(want, procs); diff != "" {
				return "processes (-want +got):\n" + diff
			}
			return ""
		}},
		{name: "no /root", command: "ls /root"},
		// The host's /home is not there: the jail's holds only E2B's home,
		// a link to the sandbox's own workspace.
		{name: "/home is only the workspace's link", command: "ls -A /home; readlink /home/user", ok: true, stdout: is("user\n/workspace")},
		{name: "no /var", command: "ls /var"},
		{name: "shadow unreadable", command: "cat /etc/shadow"},
		{name: "socket dir closed", command: "ls /run/boxkite"},
		{name: "socket dir read-only", command: `awk '$5 == "/run/boxkite" { split($6, o, ","); print o[1] }' /proc/self/mountinfo`, ok: true, stdout: is("ro")},
		{name: "state dir invisible", command: "ls " + stateDir},
		{name: "init's environ closed", command: "cat /proc/1/environ"},
		{name: "no tcp to the host", command: fmt.Sprintf("bash -c 'echo > /dev/tcp/127.0.0.1/%d'", port)},
		{name: "no network but lo", command: "ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1", ok: true, stdout: is("lo")},
		{name: "/etc read-only", command: "touch /etc/x"},
		{name: "/usr read-only", command: "touch /usr/x"},
		{name: "/ read-only", command: "touch /x"},
		{name: "/dev read-only", command: "touch /dev/x"},
		{name: "/proc/sys read-only", command: "echo x > /proc/sys/kernel/hostname"},
		{
			name: "/workspace writable", command: "echo hi > /workspace/x && cat /workspace/x", ok: true, stdout: is("hi"),
			after: func(t *testing.T) {
				fi, err := os.Stat(filepath.Join(workspace, "x"))
				if err != nil {
					t.Fatalf("host side of /workspace/x: %v", err)
				}
				st := fi.Sys().(*syscall.Stat_t)
				// Canonical: the id the sandbox sees, whatever its range.
				if want := uint32(jail.DefaultUID); st.Uid != want || st.Gid != want {
					t.Errorf("host owner of /workspace/x = %d:%d, want %d:%d", st.Uid, st.Gid, want, want)
				}
			},
		},
		{name: "/tmp writable", command: "echo hi > /tmp/x && cat /tmp/x", ok: true, stdout: is("hi")},
		{name: "/dev/shm writable", command: "echo hi > /dev/shm/x && cat /dev/shm/x", ok: true, stdout: is("hi")},
		{name: "outputs writable", command: "echo hi > " + jail.OutputsDir + "/x && cat " + jail.OutputsDir + "/x", ok: true, stdout: is("hi")},
		{name: "/dev/null works", command: "echo x > /dev/null && head -c 4 /dev/zero | wc -c", ok: true, stdout: is("4")},
		{name: "python runs", command: "python3 -c 'print(1+1)'", ok: true, stdout: is("2")},
		{name: "no capabilities", command: "grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status | awk '{print $2}' | sort -u", ok: true, stdout: is("0000000000000000")},
		{name: "no_new_privs", command: "grep NoNewPrivs /proc/self/status", ok: true, stdout: is("NoNewPrivs:\t1")},
		{name: "core dumps off", command: "ulimit -c", ok: true, stdout: is("0")},
		{name: "open files capped", command: "ulimit -n", ok: true, stdout: is("4096")},
		{name: "processes capped", command: "bash -c 'ulimit -u'", ok: true, stdout: is("448")},
		{name: "file size capped just above the quota", command: "bash -c 'ulimit -f'", ok: true, stdout: is("5243904")},
		{name: "seccomp filter", command: "grep Seccomp: /proc/self/status", ok: true, stdout: is("Seccomp:\t2")},
		{name: "own cgroup namespace", command: "cut -d: -f3 /proc/self/cgroup | sort -u", ok: true, stdout: is("/")},
		{name: "workspace is its own disk", command: "stat -f -c %T /workspace; df -k --output=size /workspace | tail -1", ok: true, stdout: func(got string) string {
			var fsType string
			var kib int64
			// ext4's own metadata takes a little of the 5 GiB image.
			if _, err := fmt.Sscan(got, &fsType, &kib); err != nil || fsType != "ext2/ext3" || kib < 5000000 || kib > 5242880 {
				return fmt.Sprintf("stdout %q, want ext2/ext3 and just under 5 GiB", got)
			}
			return ""
		}},
		{name: "no new namespaces", command: "cat /proc/sys/user/max_mnt_namespaces /proc/sys/user/max_user_namespaces", ok: true, stdout: is("0\n0")},
		// The sidecar parses agent-controlled input: every one of its
		// threads (it is the jail's init too, one process) keeps only this.
		{name: "sidecar keeps only its capabilities", command: `cat /proc/$(pgrep -nf '^boxkite-sidecar (init|serve)')/task/*/status | grep -E '^Cap(Bnd|Prm|Eff)' | cut -f2 | sort -u`, ok: true, stdout: is("00000000000000ef")},
		{name: "sidecar has no_new_privs", command: `cat /proc/$(pgrep -nf '^boxkite-sidecar (init|serve)')/task/*/status | grep NoNewPrivs | sort -u`, ok: true, stdout: is("NoNewPrivs:\t1")},
		// The sidecar is PID 1 (issue 27): it reaps what a command leaves.
		// The orphan has exited once `sleep 1` is done; its zombie must go
		// within 10 s (a jail at load ~30 took longer than the 0.8 s left
		// before a single look, once in a session).
		{name: "orphans are reaped", command: `(sleep 0.2 &); sleep 1; for i in $(seq 50); do n=$(ps -e -o stat= | grep -c '^Z'); [ "$n" = 0 ] && break; sleep 0.2; done; echo "$n"`, ok: true, stdout: is("0")},
		// That the sidecar's threads share the command's cgroup namespace is
		// read from the host by internal/securitytest's
		// TestCgroupNamespaceHidesHost: a command may not read the
		// namespaces of the sidecar (not dumpable), so a readlink here
		// listed only its own and could not fail.
	}
}

func TestIsolation(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "iso")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	// Sequential: the process-list probe must see no sibling commands.
	for _, p := range isolationProbes(d.cfg.StateDir, filepath.Join(d.sandboxDir("iso"), diskMount, "workspace"), port) {
		t.Run(p.name, func(t *testing.T) {
			res := run(t, ep, p.command)
			if (res.ExitCode == 0) != p.ok {
				t.Fatalf("%q exited %d, want success %v; stdout %q stderr %q", p.command, res.ExitCode, p.ok, res.Stdout, res.Stderr)
			}
			if p.stdout != nil {
				if why := p.stdout(res.Stdout); why != "" {
					t.Errorf("%q: %s", p.command, why)
				}
			}
			if p.after != nil {
				p.after(t)
			}
		})
	}
	t.Run("token not visible", func(t *testing.T) {
		res := run(t, ep, `cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'; env`)
		if !strings.Contains(res.Stdout, "boxkite-sidecar") {
			t.Fatalf("read no command lines at all: %+v", res)
		}
		if strings.Contains(res.Stdout, ep.Token) {
			t.Errorf("the sidecar token is readable in /proc or the environment:\n%s", res.Stdout)
		}
	})
}

// TestSocketsOutsideJail: the sidecar's socket is one the server made in
// the sandbox's own directory, which no jail reaches, owned by the
// server and 0600; the run dir the jail sees is the server's, readable by
// the jail's root alone, and empty without egress.
func TestSocketsOutsideJail(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "socks")
	if want := filepath.Join(d.sandboxDir("socks"), sidecarSocket); ep.Address != want {
		t.Errorf("endpoint %s, want %s", ep.Address, want)
	}
	fi, err := os.Lstat(ep.Address)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 || int(st.Uid) != os.Geteuid() {
		t.Errorf("sidecar socket: mode %v, owner %d; want a 0600 socket of uid %d", fi.Mode(), st.Uid, os.Geteuid())
	}
	run := filepath.Join(d.sandboxDir("socks"), "run")
	fi, err = os.Lstat(run)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	wantMode, wantGID := os.FileMode(0o700), uint32(os.Getegid())
	if d.root {
		s, err := readState(d.sandboxDir("socks"))
		if err != nil {
			t.Fatal(err)
		}
		wantMode, wantGID = 0o750, uint32(s.HostIDBase)
	}
	if !fi.IsDir() || fi.Mode().Perm() != wantMode || int(st.Uid) != os.Geteuid() || st.Gid != wantGID {
		t.Errorf("run dir: mode %v, owner %d:%d; want a %v directory of %d:%d", fi.Mode(), st.Uid, st.Gid, wantMode, os.Geteuid(), wantGID)
	}
	if entries, err := os.ReadDir(run); err != nil || len(entries) != 0 {
		t.Errorf("run dir holds %v (%v), want nothing", entries, err)
	}
}

func TestCreateRejectsBadIDs(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	for _, id := range []string{"", "..", "a/b", "-x", ".hidden", strings.Repeat("x", 200)} {
		if _, err := d.Create(context.Background(), model.Spec{ID: id}); err == nil {
			t.Errorf("Create(%q) succeeded, want an error", id)
		}
	}
	create(t, d, "dup")
	if _, err := d.Create(context.Background(), model.Spec{ID: "dup"}); err == nil {
		t.Errorf("second Create(%q) succeeded, want an error", "dup")
	}
	if got := run(t, mustEndpoint(t, d, "dup"), "echo ok"); got.Stdout != "ok\n" {
		t.Errorf("first sandbox broken by the duplicate Create: %+v", got)
	}
}

func mustEndpoint(t *testing.T, d *Driver, id string) model.Endpoint {
	t.Helper()
	obs, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if o.ID == id {
			return o.Endpoint
		}
	}
	t.Fatalf("List has no %q: %+v", id, obs)
	return model.Endpoint{}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "del")
	st, err := readState(d.sandboxDir("del"))
	if err != nil {
		t.Fatal(err)
	}
	// A process left running in the sandbox must die with it.
	run(t, ep, "sleep 7357 >/dev/null 2>&1 &")
	if err := d.Delete(context.Background(), "del"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if !gone(st) {
		t.Errorf("jail init %d still running after Delete", st.PID)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 7357").Output(); len(out) > 0 {
		t.Errorf("sandbox process survived Delete: pids %s", out)
	}
	if _, err := os.Stat(d.sandboxDir("del")); !os.IsNotExist(err) {
		t.Errorf("sandbox dir after Delete: %v, want not exist", err)
	}
	checkHostSideGone(t, d.sandboxDir("del"), st)
	obs, err := d.List(context.Background())
	if err != nil || len(obs) != 0 {
		t.Errorf("List after Delete = %+v, %v; want none", obs, err)
	}
	for _, id := range []string{"del", "never-existed", "../x"} {
		if err := d.Delete(context.Background(), id); err != nil {
			t.Errorf("Delete(%q) of a gone sandbox: %v", id, err)
		}
	}
}

// TestSurvivesServerKill starts a sandbox from another process, SIGKILLs that
// process, and adopts the sandbox with a new Driver.
func TestSurvivesServerKill(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	ep, helper := startHelper(t, stateDir, nil)
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()

	d, err := New(Config{StateDir: stateDir, SidecarPath: sidecarBin})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Observed{{ID: helperID, Endpoint: ep, Alive: true}}
	if diff := cmp.Diff(want, obs); diff != "" {
		t.Fatalf("List after the creating process died (-want +got):\n%s", diff)
	}
	if got := run(t, ep, "echo still here"); got.Stdout != "still here\n" {
		t.Errorf("exec in adopted sandbox = %+v", got)
	}
	st, err := readState(filepath.Join(stateDir, "sandboxes", helperID))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Cgroup.Dirs) == 0 {
		t.Errorf("adopted sandbox has no cgroup recorded: %+v", st)
	}
	if procs, err := st.Cgroup.Procs(); err != nil || len(procs) != 1 || procs[0] != st.PID {
		t.Errorf("adopted sandbox's cgroup holds %v (%v), want the sidecar, its init (%d)", procs, err, st.PID)
	}
	// The jail, not the process that created it, holds its id range.
	if st.HostIDBase == 0 || !heldBy(t, DefaultIDRangeDir, st.HostIDBase) {
		t.Errorf("the adopted sandbox's id range %d is not leased after its creator died", st.HostIDBase)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st.HostIDBase != 0 && heldBy(t, DefaultIDRangeDir, st.HostIDBase) {
		t.Errorf("the id range %d is still leased after Shutdown", st.HostIDBase)
	}
	checkHostSideGone(t, filepath.Join(stateDir, "sandboxes", helperID), st)
	if obs, _ := d.List(context.Background()); len(obs) != 0 {
		t.Errorf("List after Shutdown = %+v, want none", obs)
	}
}

// checkHostSideGone fails if a deleted sandbox left its cgroup or a mount
// behind.
func checkHostSideGone(t *testing.T, dir string, st state) {
	t.Helper()
	for _, d := range st.Cgroup.Dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s after Delete: %v, want not exist", d, err)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), " "+dir+"/") {
		t.Errorf("a mount under %s survived Delete", dir)
	}
}

// TestSizes checks the cgroup limits of a size preset and the quota of a
// storage_gb, as the host sees them.
func TestSizes(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ctx := context.Background()
	if _, err := d.Create(ctx, model.Spec{ID: "huge", Size: "huge"}); err == nil {
		t.Error("Create with an unknown size succeeded")
	}
	if _, err := d.Create(ctx, model.Spec{ID: "medium", Size: "medium", StorageGB: 0.5}); err != nil {
		t.Fatal(err)
	}
	st, err := readState(d.sandboxDir("medium"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // either cgroup version's file, whichever exists
		"memory.limit_in_bytes": "2147483648", "memory.max": "2147483648",
		"cpu.cfs_quota_us": "200000", "cpu.max": "200000 100000",
		"pids.max": "512",
	}
	found := 0
	for _, dir := range st.Cgroup.Dirs {
		for name, v := range want {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			found++
			if got := strings.TrimSpace(string(b)); got != v {
				t.Errorf("%s/%s = %q, want %q", dir, name, got, v)
			}
		}
	}
	if found != 3 {
		t.Errorf("found %d of the memory, cpu and pids limits in %v", found, st.Cgroup.Dirs)
	}
	fi, err := os.Stat(filepath.Join(d.sandboxDir("medium"), diskImage))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 512<<20 {
		t.Errorf("disk image of %d bytes, want 512 MiB", fi.Size())
	}
}

// TestTmpfsStorage runs the quota fallback for hosts without loop devices:
// /workspace and outputs share one tmpfs of the quota's size.
func TestTmpfsStorage(t *testing.T) {
	t.Parallel()
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Storage: StorageTmpfs, StorageGB: 0.03125})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	ep := create(t, d, "tmpfs")
	probes := []struct{ command, want string }{
		{"stat -f -c %T /workspace; df -k --output=size /workspace | tail -1 | tr -d ' '", "tmpfs\n32768\n"},
		{"stat -c %u /workspace " + jail.OutputsDir, "1001\n1001\n"},
		{"echo hi > /workspace/x && cat /workspace/x", "hi\n"},
		{"dd if=/dev/zero of=" + jail.OutputsDir + "/fill bs=1M count=40 2>&1 | grep -o 'No space left on device'", "No space left on device\n"},
		{"echo more > /workspace/y 2>/dev/null || echo full", "full\n"},
		{"grep -c ' /\\.workspace ' /proc/self/mountinfo", "0\n"},
	}
	for _, p := range probes {
		if got := run(t, ep, p.command); got.Stdout != p.want {
			t.Errorf("%q = %+v, want stdout %q", p.command, got, p.want)
		}
	}
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	var states []state
	for _, id := range []string{"s1", "s2", "s3"} {
		create(t, d, id)
		st, err := readState(d.sandboxDir(id))
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for _, st := range states {
		if !gone(st) {
			t.Errorf("jail init %d still running after Shutdown", st.PID)
		}
	}
	if obs, err := d.List(ctx); err != nil || len(obs) != 0 {
		t.Errorf("List after Shutdown = %+v, %v; want none", obs, err)
	}
}

func TestCreateFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Create(context.Background(), model.Spec{ID: "bad"})
	if err == nil {
		t.Fatal("Create with a broken sidecar succeeded")
	}
	if _, serr := os.Stat(d.sandboxDir("bad")); !os.IsNotExist(serr) {
		t.Errorf("failed Create left %s behind (stat: %v)", d.sandboxDir("bad"), serr)
	}
}

// TestUnprivileged runs the driver as nobody: the jail maps only that uid
// and commands reach uid 1001 through a nested user namespace.
func TestUnprivileged(t *testing.T) {
	t.Parallel()
	const nobody = 65534
	base, err := os.MkdirTemp("", "boxkite-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	stateDir := filepath.Join(base, "state")
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(stateDir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	asNobody := &exec.Cmd{SysProcAttr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}}
	ep, helper := startHelper(t, stateDir, asNobody)
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		d, err := New(Config{StateDir: stateDir, SidecarPath: sidecarBin})
		if err == nil {
			err = d.Shutdown(context.Background())
		}
		if err != nil {
			t.Errorf("clean up: %v", err)
		}
	})
	probes := []struct{ command, want string }{
		{"id -u; id -g", "1001\n1001\n"},
		{"cat /etc/shadow >/dev/null 2>&1 || echo denied", "denied\n"},
		{"touch /etc/x 2>/dev/null || echo denied", "denied\n"},
		{"ls /root 2>/dev/null || echo absent", "absent\n"},
		{"echo hi > /workspace/x && cat /workspace/x", "hi\n"},
		{"ps -e -o comm=", "boxkite-sidecar\nps\n"}, // no sh: sidecar/direct.go
	}
	for _, p := range probes {
		if got := runOthers(t, ep, p.command); got.Stdout != p.want {
			t.Errorf("as nobody, %q = %+v, want stdout %q", p.command, got, p.want)
		}
	}
}

func BenchmarkCreateDelete(b *testing.B) {
	d := newDriver(b)
	ctx := context.Background()
	i := 0
	var creating, deleting time.Duration
	for b.Loop() {
		id := fmt.Sprintf("b%d", i)
		i++
		t0 := time.Now()
		if _, err := d.Create(ctx, model.Spec{ID: id}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
		creating, deleting = creating+t1.Sub(t0), deleting+time.Since(t1)
	}
	b.ReportMetric(float64(creating.Milliseconds())/float64(i), "create-ms/op")
	b.ReportMetric(float64(deleting.Milliseconds())/float64(i), "delete-ms/op")
}
