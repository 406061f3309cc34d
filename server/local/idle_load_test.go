//go:build linux

package local

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestIdleThreadsUnderLoad: every idle jail's sidecar comes down to four
// threads (issue 27 item 4), also when many are made at once on a host
// whose CPUs are busy, so that a sidecar's trims race its own start, its
// requests and its orphan reaper's wake. Session 22 counted 199 of 200
// such sandboxes at four and one at five. The sandboxes are made and used
// while busy loops hold the CPUs; the loops stop, and each sidecar must
// then reach four threads. Before session 23 (idle27) one of the 40 kept a
// fifth for good in 4 of 17 runs at load 70-97: the runtime started it as
// the trimmer's last count (a system call it knew of) handed the one P off
// (jail.CountThreads; jail.ReaperAsleep guards the reaper's own handoff).
// Takes about 10 s on a loaded host when it passes, a minute when it fails.
func TestIdleThreadsUnderLoad(t *testing.T) {
	t.Parallel()
	const (
		sandboxes = 40
		loops     = 12
		together  = 4
	)
	d := newDriver(t)
	stop := busyLoops(t, loops)
	pids := make([]int, sandboxes)
	sem := make(chan struct{}, together)
	var wg sync.WaitGroup
	for i := range sandboxes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			id := fmt.Sprintf("loaded%d", i)
			ep := create(t, d, id)
			st, err := readState(d.sandboxDir(id))
			if err != nil {
				t.Error(err)
				return
			}
			pids[i] = st.PID
			run(t, ep, "true")
		})
	}
	wg.Wait()
	stop()
	if t.Failed() {
		return
	}
	// The trims back off to 25 s after the last request (threadTrimmer);
	// a sidecar over four a minute on keeps its spare thread for good.
	over := map[int]int{}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		clear(over)
		for _, pid := range pids {
			if n := taskCount(t, pid); n > 4 {
				over[pid] = n
			}
		}
		if len(over) == 0 {
			return
		}
	}
	for pid, n := range over {
		t.Errorf("sidecar %d holds %d threads a minute after its last request, want at most 4:\n%s", pid, n, threadsOf(t, pid))
	}
}

// busyLoops starts n shell loops that keep the CPUs busy until stop is
// called (at cleanup at the latest).
func busyLoops(t *testing.T, n int) (stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, cmd := range cmds {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// threadsOf describes each thread of process pid for a failure: its id,
// state, system call (with a futex's address) and kernel stack.
func threadsOf(t *testing.T, pid int) string {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, task := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, task.Name())
		stat, _ := os.ReadFile(dir + "stat")
		state, age := "?", "?"
		if _, rest, ok := strings.Cut(string(stat), ") "); ok {
			f := strings.Fields(rest)
			state = f[0]
			if len(f) > 19 {
				age = threadAge(f[19])
			}
		}
		syscall, _ := os.ReadFile(dir + "syscall")
		wchan, _ := os.ReadFile(dir + "wchan")
		status, _ := os.ReadFile(dir + "status")
		var switches []string
		for line := range strings.Lines(string(status)) {
			if strings.Contains(line, "ctxt_switches") {
				switches = append(switches, strings.Join(strings.Fields(line), " "))
			}
		}
		tid, _ := strconv.Atoi(task.Name())
		fmt.Fprintf(&b, "  thread %d (leader %t, started %s s ago) %s wchan %s syscall %s %s\n", tid, tid == pid, age, state, wchan,
			strings.TrimSpace(string(syscall)), strings.Join(switches, " "))
	}
	return b.String()
}

// threadAge is how long ago a thread whose /proc stat start time (clock
// ticks after boot, at 100 a second) is start began, in seconds.
func threadAge(start string) string {
	ticks, err := strconv.ParseFloat(start, 64)
	if err != nil {
		return "?"
	}
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return "?"
	}
	up, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return "?"
	}
	return strconv.FormatFloat(up-ticks/100, 'f', 2, 64)
}
