package kube_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boxkite/boxkite/server/kube"
)

// TestWarmPoolScaleDown: two servers filling one pool at once end with
// its size, and a pool's size lowered (a helm upgrade of
// sandboxes.warmPool, to 0 too) retires the warm pods past it with their
// Secrets and NetworkPolicies. They stayed, holding their requests and
// counting against the namespace's quota: a smaller pool never trimmed
// and a pool of 0 never looked, not even to retire them at their age.
func TestWarmPoolScaleDown(t *testing.T) {
	e := newEnv(t, kube.Config{})
	ctx := context.Background()
	run := func(size int) (*kube.Driver, func()) {
		cfg := e.cfg
		cfg.PoolSize = size
		d, err := kube.New(e.cluster.Client, cfg)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); d.Run(runCtx) }()
		stop := func() { cancel(); <-done; d.Release() }
		t.Cleanup(stop)
		return d, sync.OnceFunc(stop)
	}
	warm := kube.LabelState + "=" + kube.StateWarm
	count := func() (pods, secrets, policies int) {
		list, err := e.cluster.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: warm})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				pods++
			}
		}
		secs, err := e.cluster.Client.CoreV1().Secrets(e.ns).List(ctx, metav1.ListOptions{LabelSelector: warm})
		if err != nil {
			t.Fatal(err)
		}
		pols, err := e.cluster.Client.NetworkingV1().NetworkPolicies(e.ns).List(ctx, metav1.ListOptions{LabelSelector: warm})
		if err != nil {
			t.Fatal(err)
		}
		return pods, len(secs.Items), len(pols.Items)
	}
	exactly := func(n int) func() bool {
		return func() bool {
			pods, secrets, policies := count()
			return pods == n && secrets == n && policies == n
		}
	}

	a, stopA := run(3)
	b, stopB := run(3)
	// Each server's first refill is done: whatever both started exists.
	waitFor(t, "both servers' first refill", func() bool { return a.PoolStats().Ready >= 3 && b.PoolStats().Ready >= 3 })
	waitFor(t, "3 warm pods from two servers", exactly(3))
	stopA()
	stopB()

	for _, size := range []int{1, 0} {
		_, stop := run(size)
		waitFor(t, fmt.Sprintf("the pool scaled down to %d", size), exactly(size))
		stop()
	}
}
