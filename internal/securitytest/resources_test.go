package securitytest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// TestForkBomb: a fork bomb hits the sandbox's pids limit; the host and
// another sandbox stay responsive, and the sandbox recovers once the
// bomb's command is killed at its timeout.
func TestForkBomb(t *testing.T) {
	x := newSuite(t)
	a, b := x.sandbox(api.CreateSandboxRequest{Label: "bomb"}), x.sandbox(api.CreateSandboxRequest{Label: "bystander"})
	h := x.host(a)
	watch := x.watch(b)
	res, err := x.exec(a, api.ExecRequest{Command: "bash -c 'f() { f | f & }; f; sleep 10'", Timeout: 5})
	if err != nil {
		t.Fatalf("exec the bomb: %v", err)
	}
	t.Logf("bomb: exit %d after %dms", res.ExitCode, res.DurationMS)
	// The host can still fork.
	if err := exec.Command("true").Run(); err != nil {
		t.Errorf("the host cannot run true during the bomb: %v", err)
	}
	// The agent's RLIMIT_NPROC (7/8 of the cgroup's pids.max, so the
	// sidecar can still fork) stops the bomb first; pids.max backs it.
	peak, err := h.cgroupFile("pids.peak")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := fmt.Sscan(peak, &n); err != nil || n < testPids/2 || n > testPids {
		t.Errorf("pids.peak = %q, want the bomb held between %d and the limit %d", peak, testPids/2, testPids)
	}
	hits, _ := h.cgroupStat("pids.events", "max")
	t.Logf("bomb peaked at %d tasks; pids.max refused %d forks", n, hits)
	err = eventually(30*time.Second, func() error {
		res, err := x.exec(a, api.ExecRequest{Command: "true", Timeout: 5})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
		}
		return err
	})
	if err != nil {
		t.Errorf("the bombed sandbox did not recover: %v", err)
	}
	watch.check(t)
	if err := x.c.DeleteSandbox(t.Context(), a); err != nil {
		t.Errorf("delete the bombed sandbox: %v", err)
	}
	for _, d := range h.Cgroup.Dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the bombed sandbox's cgroup %s outlived it (%v)", d, err)
		}
	}
}

// TestMemoryHog: a command that allocates past the size preset's memory is
// OOM-killed inside the sandbox's cgroup (exit 137, stop_reason
// memory_limit); the sidecar survives. A kill -9 after it, also after a
// restart of the control plane, has no stop_reason.
func TestMemoryHog(t *testing.T) {
	x := newSuite(t)
	a, b := x.sandbox(api.CreateSandboxRequest{Label: "hog"}), x.sandbox(api.CreateSandboxRequest{Label: "bystander"})
	h := x.host(a)
	// The OOM killer is to pick agent commands, never the sidecar.
	res := x.run(a, "cat /proc/self/oom_score_adj /proc/$(pgrep -nf '^boxkite-sidecar (init|serve)')/oom_score_adj")
	if res.Stdout != "1000\n0\n" {
		t.Errorf("oom_score_adj of a command and the sidecar = %q, want 1000 and 0", res.Stdout)
	}
	watch := x.watch(b)
	cmd := fmt.Sprintf(`python3 -c 'b = b"x" * %d; print("survived")'`, 4*testMemory)
	res = x.run(a, cmd)
	if res.ExitCode != 128+int(syscall.SIGKILL) || strings.Contains(res.Stdout, "survived") {
		t.Errorf("the memory hog = %+v, want killed (exit 137)", res)
	}
	if res.StopReason != api.StopReasonMemoryLimit {
		t.Errorf("the memory hog's stop_reason = %q, want %q", res.StopReason, api.StopReasonMemoryLimit)
	}
	oom, err := h.cgroupStat("memory.events", "oom_kill") // cgroup v2
	if err != nil {
		oom, err = h.cgroupStat("memory.oom_control", "oom_kill") // v1
	}
	if err != nil || oom == 0 {
		t.Errorf("the sandbox's cgroup recorded %d OOM kills (%v), want the hog's", oom, err)
	}
	if res := x.run(a, "echo alive"); res.Stdout != "alive\n" {
		t.Errorf("the sandbox after the OOM kill: %+v", res)
	}
	watch.check(t) // before the restart, which the bystander's pings would meet
	// A restarted control plane adopts the sandbox and knows the kill
	// was pinned already (the count seen is on disk): it counted from 0
	// and pinned it on the next kill -9.
	x.s.Restart(t)
	x.c = client.New(x.s.BaseURL, x.s.APIKey)
	// A SIGKILL that is not the OOM killer's (the count did not grow
	// since) exits 137 without the reason, JSON or streamed.
	if res := x.run(a, "kill -9 $$"); res.ExitCode != 137 || res.StopReason != "" {
		t.Errorf("kill -9 after the OOM kill = exit %d, stop_reason %q; want 137 and none", res.ExitCode, res.StopReason)
	}
	stream := func(command string) *api.ExecResult {
		t.Helper()
		res, err := x.c.ExecStreamResult(context.Background(), a, api.ExecRequest{Command: command, Timeout: 30}, func(api.ExecEvent) error { return nil })
		if err != nil {
			t.Fatalf("stream %q: %v", command, err)
		}
		return res
	}
	if res := stream("kill -9 $$"); res.ExitCode != 137 || res.StopReason != "" {
		t.Errorf("streamed kill -9 = exit %d, stop_reason %q; want 137 and none", res.ExitCode, res.StopReason)
	}
	if res := stream(cmd); res.ExitCode != 137 || res.StopReason != api.StopReasonMemoryLimit {
		t.Errorf("streamed memory hog = exit %d, stop_reason %q; want 137 and %q", res.ExitCode, res.StopReason, api.StopReasonMemoryLimit)
	}
}

// tcpFill opens up to 1500 loopback TCP connections in the sandbox and
// writes to each until its buffers are full, reading nothing: the kernel
// memory it makes the sandbox hold. It prints the bytes queued.
const tcpFill = `import socket
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(4096)
held, total, buf = [], 0, b"x" * 65536
for i in range(1500):
    c = socket.socket()
    c.connect(srv.getsockname())
    s, _ = srv.accept()
    c.setblocking(False)
    held.append((c, s))
    while True:
        try:
            total += c.send(buf)
        except BlockingIOError:
            break
print(total)
`

// udpFill binds up to 3000 loopback UDP sockets in the sandbox, each
// with the largest receive buffer it may ask for, and sends each 40
// datagrams (2.4 MB), reading nothing. It prints the bytes
// the sockets hold (SO_MEMINFO's receive allocation).
const udpFill = `import socket, struct
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
tx.setblocking(False)
held, total, buf = [], 0, b"x" * 60000
for i in range(3000):
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
    r.bind(("127.0.0.1", 0))
    held.append(r)
    for k in range(40):
        try:
            tx.sendto(buf, r.getsockname())
        except BlockingIOError:
            break
    total += struct.unpack("9I", r.getsockopt(socket.SOL_SOCKET, 55, 36))[0]  # SO_MEMINFO: rmem_alloc
print(total)
`

// TestTCPBuffersCharged: what a sandbox queues in TCP connections it
// never reads (loopback, inside its own network namespace) is kernel
// memory its cgroup is charged for, bounded as its memory is. Before, on
// a cgroup v1 host (which does not count socket buffers as memory unless
// asked), a sandbox of 256 MiB held 2.3 GB of the host's memory that way,
// up to the host-wide tcp_mem limit, past which the kernel says "TCP: out
// of memory" and starts dropping every process's TCP data.
func TestTCPBuffersCharged(t *testing.T) {
	x := newSuite(t)
	a := x.sandbox(api.CreateSandboxRequest{Label: "tcp"})
	if _, err := x.c.WriteFile(context.Background(), a, api.FileCreateRequest{Path: "/workspace/fill.py", Content: tcpFill}); err != nil {
		t.Fatalf("write the attack: %v", err)
	}
	res, err := x.exec(a, api.ExecRequest{Command: "python3 /workspace/fill.py", Timeout: 300})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	queued, perr := strconv.ParseInt(strings.TrimSpace(res.Stdout), 10, 64)
	if res.ExitCode != 0 || perr != nil {
		t.Fatalf("the attack = %+v", res)
	}
	t.Logf("the sandbox queued %d MiB in TCP buffers", queued>>20)
	if queued > 2*testMemory {
		t.Errorf("a sandbox of %d MiB queued %d MiB in TCP buffers, want at most %d", testMemory>>20, queued>>20, 2*testMemory>>20)
	}
	if res := x.run(a, "echo alive"); res.Stdout != "alive\n" {
		t.Errorf("the sandbox after the attack: %+v", res)
	}
}

// TestUDPBuffersCharged: the same for UDP datagrams a sandbox sends its
// own sockets and never reads.
func TestUDPBuffersCharged(t *testing.T) {
	x := newSuite(t)
	a := x.sandbox(api.CreateSandboxRequest{Label: "udp"})
	if _, err := x.c.WriteFile(context.Background(), a, api.FileCreateRequest{Path: "/workspace/fill.py", Content: udpFill}); err != nil {
		t.Fatalf("write the attack: %v", err)
	}
	res, err := x.exec(a, api.ExecRequest{Command: "python3 /workspace/fill.py", Timeout: 300})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	held, perr := strconv.ParseInt(strings.TrimSpace(res.Stdout), 10, 64)
	if res.ExitCode != 0 || perr != nil {
		t.Fatalf("the attack = %+v", res)
	}
	t.Logf("the sandbox held %d MiB in UDP buffers", held>>20)
	if held > 2*testMemory {
		t.Errorf("a sandbox of %d MiB held %d MiB in UDP buffers, want at most %d", testMemory>>20, held>>20, 2*testMemory>>20)
	}
}

// TestDiskFiller: filling /workspace (or outputs, or /tmp) stops at the
// sandbox's quota with ENOSPC; the host's disk and another sandbox's quota
// are untouched.
func TestDiskFiller(t *testing.T) {
	x := newSuite(t)
	const quotaGB = 1.0 / 16 // 64 MiB
	a := x.sandbox(api.CreateSandboxRequest{Label: "filler", StorageGB: quotaGB})
	b := x.sandbox(api.CreateSandboxRequest{Label: "bystander"})
	h := x.host(a)
	before := allocatedUnder(t, x.s.StateDir)
	watch := x.watch(b)
	for _, dir := range []string{"/workspace", "/mnt/user-data/outputs", "/tmp"} {
		t.Run(dir, func(t *testing.T) {
			res := x.run(a, "dd if=/dev/zero of="+dir+"/fill bs=1M count=200; s=$?; rm -f "+dir+"/fill; exit $s")
			if res.ExitCode == 0 || !strings.Contains(res.Stderr, "No space left on device") {
				t.Errorf("filling %s = %+v, want ENOSPC", dir, res)
			}
		})
	}
	// 4 KiB writes leave at most a few 1 KiB blocks (a small image's).
	if res := x.run(a, "dd if=/dev/zero of=/workspace/fill bs=4k 2>/dev/null; head -c 8192 /dev/zero > /workspace/x || echo full"); !strings.Contains(res.Stdout, "full") {
		t.Errorf("a full workspace still took writes: %+v", res)
	}
	if res := x.run(b, "dd if=/dev/zero of=/workspace/ok bs=1M count=8 2>&1 && ls -s /workspace/ok"); res.ExitCode != 0 {
		t.Errorf("the other sandbox cannot write while the first is full: %+v", res)
	}
	fi, err := os.Stat(filepath.Join(h.dir, "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	if used := fi.Sys().(*syscall.Stat_t).Blocks * 512; used > 64<<20 {
		t.Errorf("the full sandbox's image takes %d bytes of the host's disk, more than its quota", used)
	}
	// What the server's files take on the host's filesystem (the disk
	// images, or the clone pool's image holding them), not the filesystem's
	// free space, which other processes on the host change too. The filler
	// may take its 64 MiB and the bystander its 8; a quota breach would be
	// hundreds of MiB.
	grown := allocatedUnder(t, x.s.StateDir) - before
	t.Logf("the server's files on the host grew by %d KiB", grown>>10)
	if grown > 128<<20 {
		t.Errorf("the server's files on the host grew by %d MiB while the sandbox filled its 64 MiB quota", grown>>20)
	}
	watch.check(t)
}

// allocatedUnder is the space the files under dir take on dir's own
// filesystem: it does not descend into mounts (a sandbox's or the clone
// pool's), whose contents the host sees as their images' blocks, and
// counts a file with several links once.
func allocatedUnder(t *testing.T, dir string) int64 {
	t.Helper()
	var root syscall.Stat_t
	if err := syscall.Lstat(dir, &root); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // removed while walking, or a mount we may not read
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) != nil {
			return nil
		}
		if st.Dev != root.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !seen[st.Ino] {
			seen[st.Ino] = true
			total += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// TestInterpreterOOMFirst: the Python interpreter's process is an agent
// command like an exec's, so the OOM killer picks it before the sidecar
// (oom_score_adj 1000). It ran at the sidecar's 0: memory it made the
// kernel hold (socket or pipe buffers, which no process's size shows)
// could get the sidecar killed instead, ending the sandbox.
func TestInterpreterOOMFirst(t *testing.T) {
	x := newSuite(t)
	a := x.sandbox(api.CreateSandboxRequest{Label: "interpreter"})
	res, err := x.c.InterpreterExec(context.Background(), a, api.InterpreterExecRequest{Code: `print(open("/proc/self/oom_score_adj").read().strip())`})
	if err != nil {
		t.Fatalf("interpreter exec: %v", err)
	}
	if res.Stdout != "1000\n" {
		t.Errorf("the interpreter's oom_score_adj: %+v, want 1000", res)
	}
}
