package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestServerKilledMidBurst: the real boxkite-server, started by `boxkite
// up`, is killed with SIGKILL in the middle of a burst of execs from six
// clients. After `boxkite up` starts it again, every exec that was
// answered 2xx is in the sandbox's audit log, the chain verifies up to
// the head the server recorded, and the sandbox, adopted, still answers.
// (cmd/boxkite-server's crash test does the same in-process, for every
// package run.)
func TestServerKilledMidBurst(t *testing.T) {
	needRoot(t)
	s := newStack(t, "BOXKITE_SERVER_WARM_POOL=0")
	s.up()
	id := s.mustRun("session", "create", "--label", "burst")
	c := s.client()
	ctx := context.Background()

	const workers, killAfter = 6, 40
	var (
		mu       sync.Mutex
		answered []string
		count    atomic.Int32
		killed   = make(chan struct{})
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				cmd := fmt.Sprintf("echo burst-%d-%d", w, i)
				res, err := c.Exec(ctx, id, api.ExecRequest{Command: cmd})
				if err != nil {
					select {
					case <-killed:
						return // the server is gone: no answer
					default:
						t.Errorf("exec before the kill: %v", err)
						return
					}
				}
				if strings.TrimSpace(res.Stdout) != cmd[len("echo "):] {
					t.Errorf("exec %q printed %q", cmd, res.Stdout)
				}
				mu.Lock()
				answered = append(answered, cmd)
				mu.Unlock()
				count.Add(1)
			}
		})
	}
	for count.Load() < killAfter {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	close(killed)
	s.killServer()
	wg.Wait()

	s.up()
	c = s.client()
	entries, head := wholeLog(t, c, id)
	if err := api.VerifyLog(entries, head.HeadSeq, head.HeadHash); err != nil {
		t.Errorf("VerifyLog after the kill: %v", err)
	}
	logged := map[string]bool{}
	for _, e := range entries {
		var d struct{ Command string }
		_ = json.Unmarshal(e.Detail, &d)
		logged[d.Command] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for _, cmd := range answered {
		if !logged[cmd] {
			t.Errorf("exec %q was answered 2xx but is not in the audit log", cmd)
		}
	}
	t.Logf("%d execs answered before the kill, %d entries", len(answered), len(entries))
	if res, err := c.Exec(ctx, id, api.ExecRequest{Command: "echo after"}); err != nil || res.Stdout != "after\n" {
		t.Errorf("exec after the restart = %+v, %v", res, err)
	}
}
