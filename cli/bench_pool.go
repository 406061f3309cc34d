package cli

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"strings"
	"time"
)

// warmPoolWait bounds how long bench waits for the server's warm pool to
// fill before it measures the floors: a pool of 40 members takes tens of
// seconds to start on a small host.
const warmPoolWait = 3 * time.Minute

// warmPoolSettle is how long bench lets the host settle after the pool
// reports full: the last member's sidecar trims its threads and heap a
// second after its start (and after the driver's health check).
const warmPoolSettle = 1500 * time.Millisecond

// warmPoolPoll is how often bench reads the pool's fill while it waits.
const warmPoolPoll = 250 * time.Millisecond

// warmPool is what bench saw of the server's warm pool before measuring
// the floors (at the start and again at the end): the floors, and the
// creates served from the pool, are measured on a host whose pool is not
// filling, so neither is inflated by members starting beside them.
type warmPool struct {
	Target int `json:"target"`
	// Ready is the pool's fill once bench stopped waiting, at the start;
	// less than Target if it did not fill within the wait.
	Ready       int   `json:"ready"`
	WaitedMS    int64 `json:"waited_ms"`
	ReadyEnd    int   `json:"ready_end"`
	WaitedEndMS int64 `json:"waited_end_ms"`
}

// poolFill reads the warm pool's fill from the server's /metrics: the
// gauges named *_warm_pool_ready and *_warm_pool_target (the local and
// the kube driver both write them). ok is false when the server has no
// warm pool metrics (another driver, or a pool of 0).
func (b *bench) poolFill(ctx context.Context) (ready, target int, ok bool) {
	resp, err := b.c.Do(ctx, "GET", "/metrics", nil, nil)
	if err != nil {
		return 0, 0, false
	}
	defer resp.Body.Close()
	return parseWarmPool(resp.Body)
}

// parseWarmPool finds the warm pool gauges in a Prometheus text
// exposition.
func parseWarmPool(r io.Reader) (ready, target int, ok bool) {
	var haveReady, haveTarget bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "boxkite_") {
			continue
		}
		name, value, found := strings.Cut(line, " ")
		if !found {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(name, "_warm_pool_ready"):
			ready, haveReady = int(v), true
		case strings.HasSuffix(name, "_warm_pool_target"):
			target, haveTarget = int(v), true
		}
	}
	return ready, target, haveReady && haveTarget && target > 0
}

// waitWarmPool waits, up to limit, until the server's warm pool is full,
// then warmPoolSettle more, and returns what it last read. It returns at
// once when the server reports no warm pool.
func (b *bench) waitWarmPool(ctx context.Context, limit time.Duration) (ready, target int, waited time.Duration) {
	start := time.Now()
	ready, target, ok := b.poolFill(ctx)
	if !ok {
		return 0, 0, 0
	}
	b.prog.phase("warm pool filling", target)
	for ready < target && time.Since(start) < limit {
		b.prog.set(ready)
		select {
		case <-ctx.Done():
			return ready, target, time.Since(start)
		case <-time.After(warmPoolPoll):
		}
		if r, t, ok := b.poolFill(ctx); ok {
			ready, target = r, t
		}
	}
	if ready >= target {
		select {
		case <-ctx.Done():
		case <-time.After(warmPoolSettle):
		}
	}
	return ready, target, time.Since(start)
}
