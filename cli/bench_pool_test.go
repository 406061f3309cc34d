package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boxkite/boxkite/client"
)

func TestParseWarmPool(t *testing.T) {
	tests := []struct {
		name          string
		in            string
		ready, target int
		ok            bool
	}{
		{"local", "# HELP x\nboxkite_local_warm_pool_ready 3\nboxkite_local_warm_pool_target 40\n", 3, 40, true},
		{"kube", "boxkite_kube_warm_pool_ready 2\nboxkite_kube_warm_pool_target 2\nboxkite_kube_warm_pool_claims_total 9\n", 2, 2, true},
		{"no pool", "boxkite_local_warm_pool_ready 0\nboxkite_local_warm_pool_target 0\n", 0, 0, false},
		{"no metrics", "boxkite_execs_total 4\ngo_goroutines 12\n", 0, 0, false},
		{"ready only", "boxkite_local_warm_pool_ready 3\n", 3, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready, target, ok := parseWarmPool(strings.NewReader(tt.in))
			if ready != tt.ready || target != tt.target || ok != tt.ok {
				t.Errorf("parseWarmPool = %d, %d, %v; want %d, %d, %v", ready, target, ok, tt.ready, tt.target, tt.ok)
			}
		})
	}
}

// TestWaitWarmPool: bench measures nothing before a filling pool is full,
// and does not wait on a server without a pool.
func TestWaitWarmPool(t *testing.T) {
	const target = 3
	var polls atomic.Int64
	pool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		// One more member ready at each look.
		ready := min(polls.Add(1)-1, target)
		fmt.Fprintf(w, "boxkite_local_warm_pool_ready %d\nboxkite_local_warm_pool_target %d\n", ready, target)
	}))
	defer pool.Close()
	b := &bench{c: &client.Client{BaseURL: pool.URL}, prog: &benchProgress{}}
	ready, gotTarget, _ := b.waitWarmPool(context.Background(), warmPoolWait)
	if ready != target || gotTarget != target || polls.Load() != target+1 {
		t.Errorf("waitWarmPool = %d of %d after %d looks; want %d of %d after %d", ready, gotTarget, polls.Load(), target, target, target+1)
	}

	none := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "boxkite_execs_total 0")
	}))
	defer none.Close()
	b.c = &client.Client{BaseURL: none.URL}
	if ready, target, waited := b.waitWarmPool(context.Background(), warmPoolWait); ready != 0 || target != 0 || waited != 0 {
		t.Errorf("without a pool: waitWarmPool = %d of %d, waited %v; want no wait", ready, target, waited)
	}
}
