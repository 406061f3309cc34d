package jail

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReapOrphansWakes: the orphan reaper wakes every interval, and
// sleeps between wakes (its ppoll gets a fresh timeout each time: the
// kernel writes the time left back into the one it was given, and a spent
// one would make the loop spin). The reaper runs in a child process of
// this test binary, where it holds a locked thread for good, and writes a
// line per wake.
func TestReapOrphansWakes(t *testing.T) {
	if os.Getenv("BOXKITE_TEST_REAPER") == "1" {
		runtime.LockOSThread()
		ReapOrphans(20*time.Millisecond, func() { fmt.Println("woke") })
		return
	}
	t.Parallel()
	out := startReaperProcess(t, "TestReapOrphansWakes", "1")
	var wakes atomic.Int64
	go func() {
		for sc := bufio.NewScanner(out); sc.Scan(); {
			wakes.Add(1)
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); wakes.Load() < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the reaper woke %d times in 30 s with a 20 ms interval", wakes.Load())
		}
	}
	// Ten wakes are due in 200 ms; a loop whose sleep returned at once
	// wakes thousands of times.
	before := wakes.Load()
	time.Sleep(200 * time.Millisecond)
	if n := wakes.Load() - before; n > 100 {
		t.Errorf("the reaper woke %d times in 200 ms with a 20 ms interval: it does not sleep", n)
	}
}

// TestReapOrphansWaitsForChild: while the reaper's thread has a child, it
// reaps the child's exit without any signal reaching it (wait4, not a
// sleep that a SIGCHLD must end). The reaper runs in a child process of
// this test binary, on a thread that blocks SIGCHLD, so the exit's signal
// goes to another thread, as it can under load in a jail; the child's
// child is `sleep`, started from that thread, and the reaper's interval
// is an hour.
func TestReapOrphansWaitsForChild(t *testing.T) {
	if os.Getenv("BOXKITE_TEST_REAPER") == "child" {
		runtime.LockOSThread()
		var chld unix.Sigset_t
		chld.Val[(unix.SIGCHLD-1)/64] |= 1 << ((unix.SIGCHLD - 1) % 64)
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &chld, nil); err != nil {
			fmt.Println("block SIGCHLD:", err)
			return
		}
		cmd := exec.Command("sleep", "0.3")
		if err := cmd.Start(); err != nil { // forked by this thread: its child
			fmt.Println("start sleep:", err)
			return
		}
		fmt.Println(cmd.Process.Pid)
		ReapOrphans(time.Hour, nil)
		return
	}
	t.Parallel()
	out := startReaperProcess(t, "TestReapOrphansWaitsForChild", "child")
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatalf("the reaper's process wrote no pid: %v", sc.Err())
	}
	pid, err := strconv.Atoi(sc.Text())
	if err != nil {
		t.Fatalf("the reaper's process: %s", sc.Text())
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, fs.ErrNotExist) {
			return // reaped
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			t.Fatalf("the reaper's child is not reaped 30 s after its 0.3 s sleep: %s", b)
		}
	}
}

// startReaperProcess runs test in a child process of this test binary with
// BOXKITE_TEST_REAPER=mode (there, the test runs a reaper for good), and
// returns its stdout; the process is killed when t ends.
func startReaperProcess(t *testing.T, test, mode string) io.Reader {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "BOXKITE_TEST_REAPER="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return out
}
