package sidecar

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWaitCmdHoldsNoThread: while commands run, waitCmd keeps no thread
// of the process in waitid (issue 27: os/exec's Wait blocks one thread
// per running command, and the runtime starts others to run goroutines).
// Not parallel: no other test's command may be waited for meanwhile.
func TestWaitCmdHoldsNoThread(t *testing.T) {
	const n = 4
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("sleep", "1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i, cmd := range cmds {
		wg.Go(func() {
			_ = waitCmd(cmd)
			codes[i] = cmd.ProcessState.ExitCode()
		})
	}
	// Until the commands end, every waiting goroutine has had ample time
	// to reach its wait; look several times.
	most := 0
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		most = max(most, threadsIn(t, unix.SYS_WAITID))
	}
	wg.Wait()
	if most > 0 {
		t.Errorf("%d threads blocked in waitid while %d commands ran, want 0", most, n)
	}
	for i, c := range codes {
		if c != 0 {
			t.Errorf("command %d: exit code %d, want 0", i, c)
		}
	}
	// An exit status comes through, and a command already gone is fine.
	cmd := exec.Command("sh", "-c", "exit 7")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := waitCmd(cmd); cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("waitCmd: %v, exit code %d, want 7", err, cmd.ProcessState.ExitCode())
	}
}

// threadsIn counts this process's threads now in system call nr.
func threadsIn(t *testing.T, nr int) int {
	t.Helper()
	files, err := filepath.Glob("/proc/self/task/*/syscall")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // ended meanwhile
		}
		first, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		if got, err := strconv.Atoi(first); err == nil && got == nr {
			n++
		}
	}
	return n
}
