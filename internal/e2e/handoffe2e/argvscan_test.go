package handoffe2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// argvScan watches every process's argv for the secrets until stopped.
type argvScan struct {
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	found   []string
	scans   int
	canary  string
	spotted bool
}

// selfTest runs a process with a canary value in its argv until the scan
// has spotted it, so a scan that sees nothing cannot pass for a clean one.
func (s *argvScan) selfTest(t *testing.T) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 30", s.canary) // $0, so argv holds it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	waitFor(t, "the argv scan to spot a canary", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.spotted
	})
}

func scanArgv(t *testing.T, secrets []string) *argvScan {
	t.Helper()
	s := &argvScan{done: make(chan struct{}), canary: fmt.Sprintf("canary-%d", time.Now().UnixNano())}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.done:
				return
			default:
			}
			cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
			for _, p := range cmdlines {
				b, err := os.ReadFile(p)
				if err != nil {
					continue
				}
				if bytes.Contains(b, []byte(s.canary)) {
					s.mu.Lock()
					s.spotted = true
					s.mu.Unlock()
				}
				for _, v := range secrets {
					if bytes.Contains(b, []byte(v)) {
						s.mu.Lock()
						s.found = append(s.found, p)
						s.mu.Unlock()
					}
				}
			}
			s.mu.Lock()
			s.scans++
			s.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return s
}

func (s *argvScan) stop(t *testing.T) {
	t.Helper()
	close(s.done)
	s.wg.Wait()
	if len(s.found) > 0 {
		t.Errorf("a credential value was in the argv of %v", s.found)
	}
	if s.scans < 2 {
		t.Errorf("argv was scanned %d times only", s.scans)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
