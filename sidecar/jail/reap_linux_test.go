package jail

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestReapOrphansWakes$")
	cmd.Env = append(os.Environ(), "BOXKITE_TEST_REAPER=1")
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
