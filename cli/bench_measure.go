package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// measureExecs times --execs execs in each sandbox one at a time (the
// round trip), then as many from --concurrency workers at once, each on
// its own sandbox (the throughput).
func (b *bench) measureExecs(ctx context.Context, rep *benchReport, ids []string, f, bw float64) {
	o := b.opts
	var rtt samples
	b.prog.phase("exec", len(ids)*o.execs)
	p := b.phase("exec", floorsInterleaved, 10)
	for _, id := range ids {
		for range o.execs {
			if ctx.Err() != nil {
				return
			}
			start := time.Now()
			if err := b.exec(ctx, id); err != nil {
				b.fail("exec in %s: %v", id, err)
			} else {
				rtt.add(time.Since(start))
			}
			b.after(ctx, p)
			b.prog.step()
		}
	}
	rep.Exec = summarize(rtt.all(), f, bw).in(p)

	workers := min(o.concurrency, len(ids))
	total := workers * o.execs
	b.prog.phase("exec throughput", total)
	start := time.Now()
	var wg sync.WaitGroup
	var done atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for range o.execs {
				if ctx.Err() != nil {
					return
				}
				if err := b.exec(ctx, ids[w]); err != nil {
					b.fail("exec in %s: %v", ids[w], err)
					continue
				}
				done.Add(1)
				b.prog.step()
			}
		})
	}
	wg.Wait()
	t := &rep.ExecThroughput
	n := done.Load()
	t.Workers, t.Execs, t.PerSec = workers, int(n), round3(float64(n)/time.Since(start).Seconds())
	// HostSpawnsPerSec and VsHost are set by rescale, once the host was
	// measured again at the end.
}

// measureFiles writes a 1 MiB file into each sandbox and reads it back
// through the raw file routes; then, --execs times in each sandbox, writes
// and reads back a 4 KiB file, timed together (issue 27's small-file round
// trip, which PERFORMANCE.md compares with F).
func (b *bench) measureFiles(ctx context.Context, rep *benchReport, ids []string, f, bw float64) {
	large, small := make([]byte, benchFileSize), make([]byte, benchSmallFileSize)
	_, _ = rand.Read(large)
	_, _ = rand.Read(small)
	var write, read, smallRoundTrip samples
	b.prog.phase("files", len(ids)*(1+b.opts.execs))
	p := b.phase("files", floorsInterleaved, 10)
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if w, r, ok := b.fileRoundTrip(ctx, id, "/workspace/boxkite-bench.bin", large); ok {
			write.add(w)
			read.add(r)
		}
		b.after(ctx, p)
		b.prog.step()
		for range b.opts.execs {
			if ctx.Err() != nil {
				return
			}
			if w, r, ok := b.fileRoundTrip(ctx, id, "/workspace/boxkite-bench-4k.bin", small); ok {
				smallRoundTrip.add(w + r)
			}
			b.after(ctx, p)
			b.prog.step()
		}
	}
	rep.FileWrite, rep.FileRead = summarize(write.all(), f, bw).in(p), summarize(read.all(), f, bw).in(p)
	rep.FileWriteRead4KiB = summarize(smallRoundTrip.all(), f, bw).in(p)
}

// fileRoundTrip writes data to path in sandbox id and reads it back,
// returning how long each took; a failure is recorded and ok is false.
func (b *bench) fileRoundTrip(ctx context.Context, id, path string, data []byte) (write, read time.Duration, ok bool) {
	start := time.Now()
	if _, err := b.c.UploadFile(ctx, id, path, bytes.NewReader(data)); err != nil {
		b.fail("write a file in %s: %v", id, err)
		return 0, 0, false
	}
	write = time.Since(start)
	start = time.Now()
	dl, err := b.c.DownloadFile(ctx, id, path)
	if err != nil {
		b.fail("read a file in %s: %v", id, err)
		return 0, 0, false
	}
	got, err := io.ReadAll(dl)
	dl.Close()
	switch {
	case err != nil:
		b.fail("read a file in %s: %v", id, err)
		return 0, 0, false
	case !bytes.Equal(got, data):
		b.fail("read a file in %s: %d bytes back, not the %d written", id, len(got), len(data))
		return 0, 0, false
	}
	return write, time.Since(start), true
}

// measureMemory reads each sandbox's memory from the server; nil when the
// server has no accounting.
func (b *bench) measureMemory(ctx context.Context, ids []string) *memory {
	var total, anon, pids []int64
	for _, id := range ids {
		st, err := b.c.SandboxStats(ctx, id)
		if e, ok := errors.AsType[*api.Error](err); ok && (e.Code == api.CodeNotSupported || e.Status == http.StatusNotFound) {
			return nil // an older server, or one without cgroups
		}
		if err != nil {
			b.fail("stats of %s: %v", id, err)
			continue
		}
		total, anon, pids = append(total, st.MemoryBytes), append(anon, st.MemoryAnonBytes), append(pids, st.Pids)
	}
	return summarizeMemory(total, anon, pids)
}

// idleSettle is how long bench lets sandboxes sit after their execs
// before it measures them idle.
const idleSettle = 3 * time.Second

// settle waits idleSettle: idle means after the sidecars have ended the
// threads the execs left (a second after their last request; issue 27).
func (b *bench) settle(ctx context.Context) {
	b.prog.phase("settle", 0)
	select {
	case <-ctx.Done():
	case <-time.After(idleSettle):
	}
}

// measureIdle creates --idle sandboxes, checks each answers an exec, and
// reports their memory; then deletes them.
func (b *bench) measureIdle(ctx context.Context, f, bw float64) *idleBench {
	n, c := b.opts.idle, b.opts.concurrency
	res := &idleBench{Requested: n}
	before := memAvailable()
	_, tasksBefore, tasksOK := loadavg()
	ids := make([]string, n)
	var create samples
	b.prog.phase("idle: create", n)
	p := b.phase("idle_create", floorsBracketed, 0)
	b.bracket(ctx, p)
	_ = parallel(ctx, c, n, func(ctx context.Context, i int) error {
		start := time.Now()
		sb, err := b.c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: b.nextLabel(), LifetimeMinutes: 60})
		b.prog.step()
		if err != nil {
			b.fail("idle: create: %v", err)
			return nil
		}
		create.add(time.Since(start))
		b.track(sb.ID)
		ids[i] = sb.ID
		return nil
	})
	b.bracket(ctx, p)
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == "" })
	res.Created, res.Create = len(ids), summarize(create.all(), f, bw).in(p)

	var execs samples
	b.prog.phase("idle: exec", len(ids))
	p = b.phase("idle_exec", floorsBracketed, 0)
	b.bracket(ctx, p)
	_ = parallel(ctx, c, len(ids), func(ctx context.Context, i int) error {
		start := time.Now()
		if err := b.exec(ctx, ids[i]); err != nil {
			b.fail("idle: exec in %s: %v", ids[i], err)
		} else {
			execs.add(time.Since(start))
		}
		b.prog.step()
		return nil
	})
	b.bracket(ctx, p)
	res.Exec = summarize(execs.all(), f, bw).in(p)
	res.Answered = len(execs.all())
	b.settle(ctx)
	if after := memAvailable(); before > 0 && after > 0 && len(ids) > 0 && b.serverIsLocal() {
		res.HostMemoryPerSandboxBytes, res.HostMemoryUnmeasured = hostMemoryPerSandbox(before, after, len(ids))
		if _, tasks, ok := loadavg(); ok && tasksOK {
			res.HostThreadsPerSandbox = round3(float64(tasks-tasksBefore) / float64(len(ids)))
		}
	}
	b.prog.phase("idle: memory", 0)
	res.Memory = b.measureMemory(ctx, ids)

	b.prog.phase("idle: delete", len(ids))
	_ = parallel(ctx, c, len(ids), func(ctx context.Context, i int) error {
		if err := b.delete(ctx, ids[i]); err != nil {
			b.fail("idle: delete %s: %v", ids[i], err)
		}
		b.prog.step()
		return nil
	})
	return res
}

// measureCLIStart times `boxkite version`, the CLI's own start, when bench
// knows its own binary; nil otherwise.
func (b *bench) measureCLIStart(ctx context.Context, f, bw float64) *latency {
	self := b.self
	if self == "" {
		return nil
	}
	p := b.phase("cli_start", floorsInterleaved, 4)
	var d []time.Duration
	for range 20 {
		s, err := spawnOnce(ctx, self, "version")
		if err != nil {
			b.fail("cli start: %v", err)
			break
		}
		d = append(d, s)
		b.after(ctx, p)
	}
	return summarize(d, f, bw).in(p)
}

// measureCreates creates sandboxes one at a time, then concurrency at once,
// each followed by its first exec, and returns the ids of those created.
func (b *bench) measureCreates(ctx context.Context, rep *benchReport, f, bw float64) []string {
	o := b.opts
	// Serial creates, each followed by its first exec.
	var create, first samples
	var ids []string
	b.prog.phase("create", o.sandboxes)
	// Bracketed, not interleaved: a spawn right after a create meets the
	// create's own tail (its server and jail work outlast the first exec),
	// and a floor inflated by it would hide that cost (session 13: create
	// phase F up to 11x the next phase's under load).
	p := b.phase("create", floorsBracketed, 0)
	b.bracket(ctx, p)
	for range o.sandboxes {
		if id, ok := b.createAndExec(ctx, &create, &first); ok {
			ids = append(ids, id)
		}
		b.prog.step()
	}
	b.bracket(ctx, p)
	rep.Create, rep.CreateToFirstExec = summarize(create.all(), f, bw).in(p), summarize(first.all(), f, bw).in(p)

	// Burst: concurrency creates at once.
	var bcreate, bfirst samples
	burst := make([]string, o.concurrency)
	b.prog.phase("burst create", o.concurrency)
	p = b.phase("burst_create", floorsBracketed, 0)
	b.bracket(ctx, p)
	_ = parallel(ctx, o.concurrency, o.concurrency, func(ctx context.Context, i int) error {
		burst[i], _ = b.createAndExec(ctx, &bcreate, &bfirst)
		b.prog.step()
		return nil
	})
	b.bracket(ctx, p)
	for _, id := range burst {
		if id != "" {
			ids = append(ids, id)
		}
	}
	rep.BurstCreate, rep.BurstCreateToFirstExec = summarize(bcreate.all(), f, bw).in(p), summarize(bfirst.all(), f, bw).in(p)
	return ids
}

// measureDeletes deletes ids, concurrency at once.
func (b *bench) measureDeletes(ctx context.Context, ids []string, f, bw float64) *latency {
	o := b.opts
	var del samples
	b.prog.phase("delete", len(ids))
	p := b.phase("delete", floorsBracketed, 0)
	b.bracket(ctx, p)
	_ = parallel(ctx, o.concurrency, len(ids), func(ctx context.Context, i int) error {
		start := time.Now()
		if err := b.delete(ctx, ids[i]); err != nil {
			b.fail("delete %s: %v", ids[i], err)
		} else {
			del.add(time.Since(start))
		}
		b.prog.step()
		return nil
	})
	b.bracket(ctx, p)
	return summarize(del.all(), f, bw).in(p)
}

// hostMemoryPerSandbox is the fall in the host's MemAvailable, before to
// after, per sandbox of n; nil with the reason when it rose: other
// processes freed more memory than the sandboxes took meanwhile, and a
// negative cost per sandbox would be no measure at all.
func hostMemoryPerSandbox(before, after int64, n int) (*int64, string) {
	if after > before {
		return nil, fmt.Sprintf("host MemAvailable rose %s while they ran (other processes freed memory): not measurable on a machine this busy", mib(after-before))
	}
	per := (before - after) / int64(n)
	return &per, ""
}
