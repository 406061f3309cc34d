package e2b

import (
	"context"
	"math"
	"sync"
	"time"
)

// cpuWindow is the shortest span getMetrics measures a sandbox's CPU use
// over: a use in percent is a rate, which one reading cannot tell (envd's
// is over the time since its previous sample).
const cpuWindow = 250 * time.Millisecond

// cpuSampleMaxAge is the oldest previous reading a call measures against:
// a caller polling at most this far apart gets the use since its previous
// call at once; an older reading is dropped and the call watches
// cpuWindow as the first one does.
const cpuSampleMaxAge = time.Minute

// cpuSample is one reading of a sandbox's CPU time.
type cpuSample struct {
	at     time.Time
	micros int64
}

// cpuSamples keeps the last reading of each sandbox whose metrics were
// asked for. Nothing runs between calls (no goroutine, no timer: an idle
// sandbox is never read unless someone asks), and a reading older than
// cpuSampleMaxAge is of no use, so the map holds at most the sandboxes
// asked about in the last two cpuSampleMaxAge: each store sweeps the old
// readings out once per cpuSampleMaxAge, and a sandbox killed or gone
// loses its reading at once.
type cpuSamples struct {
	mu    sync.Mutex
	last  map[string]cpuSample
	swept time.Time
}

// swap records s as id's last reading and returns the one it replaces.
func (c *cpuSamples) swap(id string, s cpuSample) (prev cpuSample, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]cpuSample{}
	}
	if s.at.Sub(c.swept) > cpuSampleMaxAge {
		for k, v := range c.last {
			if s.at.Sub(v.at) > cpuSampleMaxAge {
				delete(c.last, k)
			}
		}
		c.swept = s.at
	}
	prev, ok = c.last[id]
	c.last[id] = s
	return prev, ok
}

// forget drops id's reading (a sandbox killed, or gone).
func (c *cpuSamples) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, id)
}

// len is how many readings are kept, for tests.
func (c *cpuSamples) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.last)
}

// cpuUsedPct is the share of its cpus the sandbox used since a reading of
// its CPU time at least cpuWindow old, in percent of all of them (0 to
// 100, as envd's gopsutil cpu.Percent); 0 when the driver does not
// account for CPU time. first is a reading taken now. The reading it
// measures from is the previous call's when that is cpuWindow to
// cpuSampleMaxAge old (no wait); one younger is waited on for the rest of
// cpuWindow; without one, the call watches a whole cpuWindow from first.
// Every call waited the whole window before.
func (h *Handler) cpuUsedPct(ctx context.Context, c Caller, id string, first Usage, cpus int) (float64, error) {
	if first.CPUMicros <= 0 || cpus < 1 {
		return 0, nil
	}
	now := h.now()
	from := cpuSample{at: now, micros: first.CPUMicros}
	if prev, ok := h.cpu.swap(id, from); ok && now.Sub(prev.at) <= cpuSampleMaxAge && !prev.at.After(now) && prev.micros <= first.CPUMicros {
		from = prev // a restarted sandbox's count starts again: not comparable
	}
	to := cpuSample{at: now, micros: first.CPUMicros}
	if wait := cpuWindow - now.Sub(from.at); wait > 0 {
		if err := h.sleep(ctx, wait); err != nil {
			return 0, err
		}
		u, _, err := h.cp.Usage(ctx, c, id)
		if err != nil {
			h.cpu.forget(id)
			return 0, err
		}
		to = cpuSample{at: h.now(), micros: u.CPUMicros}
		h.cpu.swap(id, to)
	}
	elapsed := to.at.Sub(from.at)
	if elapsed <= 0 || to.micros < from.micros {
		return 0, nil
	}
	pct := float64(to.micros-from.micros) / float64(elapsed.Microseconds()*int64(cpus)) * 100
	return math.Round(min(pct, 100)*100) / 100, nil
}
