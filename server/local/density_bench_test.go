//go:build linux

package local

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkIdleDensity measures what one idle sandbox costs the host, by
// counts (issue 27: 2,000 idle sandboxes at ≤ 3 MiB and ≤ 4 threads
// each): it creates b.N sandboxes (run with -test.benchtime=Nx), runs one
// exec in each, waits until their sidecars have trimmed their threads,
// and diffs the host's tasks (kernel threads included, grouped by name),
// /proc/meminfo and /proc/slabinfo against the start. The counts of
// tasks by name do not depend on the machine's load; the memory figures
// include whatever other processes did meanwhile, so run it on a quiet
// machine or with a large N.
func BenchmarkIdleDensity(b *testing.B) {
	d := newDriver(b)
	ctx := context.Background()
	dropCaches(b)
	before := hostSnapshot(b)
	heapBefore, goBefore := driverHeap()
	n := b.N
	eps := make([]model.Endpoint, n)
	for i := range n {
		id := fmt.Sprintf("dens%d", i)
		ep, err := d.Create(ctx, model.Spec{ID: id})
		if err != nil {
			b.Fatalf("create %d: %v", i, err)
		}
		eps[i] = ep
		run(b, ep, "true")
	}
	b.StopTimer()
	time.Sleep(3 * time.Second) // past the sidecars' thread trim (1 s)
	dropCaches(b)
	after := hostSnapshot(b)
	heapAfter, goAfter := driverHeap()
	holdForTrace(b)
	sidecar, most := 0, 0
	var charged, anon int64 // the sandboxes' cgroups, KiB
	for i := range n {
		st, err := readState(d.sandboxDir(fmt.Sprintf("dens%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		k := taskCount(b, st.PID)
		sidecar, most = sidecar+k, max(most, k)
		for _, dir := range st.Cgroup.Dirs {
			// cgroup v2 or v1's memory hierarchy; the other v1 ones have neither.
			for _, name := range []string{"memory.current", "memory.usage_in_bytes"} {
				if v, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					c, _ := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
					charged += c / 1024
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "memory.stat")); err == nil {
				readKV(b, filepath.Join(dir, "memory.stat"), func(f []string) {
					if f[0] == "anon" || f[0] == "rss" {
						a, _ := strconv.ParseInt(f[1], 10, 64)
						anon += a / 1024
					}
				})
			}
		}
	}
	b.ReportMetric(float64(most), "sidecar-threads-max")
	b.ReportMetric(float64(charged)/float64(n), "cgroup-KiB/sandbox")
	b.ReportMetric(float64(anon)/float64(n), "cgroup-anon-KiB/sandbox")
	per := func(x, y int64) float64 { return float64(y-x) / float64(n) }
	b.ReportMetric(float64(sidecar)/float64(n), "sidecar-threads/sandbox")
	b.ReportMetric(per(before.tasks, after.tasks), "host-tasks/sandbox")
	b.ReportMetric(per(before.kthreads, after.kthreads), "kthreads/sandbox")
	// The driver's own share: its heap (live objects after a collection)
	// and goroutines per sandbox, which a server holds beside the jails.
	b.ReportMetric(float64(heapAfter-heapBefore)/1024/float64(n), "driver-heap-KiB/sandbox")
	b.ReportMetric(float64(goAfter-goBefore)/float64(n), "driver-goroutines/sandbox")
	for _, k := range []string{"MemAvailable", "MemFree", "AnonPages", "Buffers", "Slab", "SUnreclaim", "KernelStack", "PageTables", "Percpu", "Shmem", "Cached"} {
		b.ReportMetric(per(before.mem[k], after.mem[k]), k+"-KiB/sandbox")
	}
	b.Logf("%d sandboxes; tasks by name, added per sandbox:", n)
	for _, c := range diffCounts(before.byName, after.byName, n) {
		b.Logf("  %-28s %+.2f", c.name, c.per)
	}
	b.Logf("slab caches, KiB added per sandbox (top 20):")
	for i, c := range diffCounts(before.slab, after.slab, n) {
		if i == 20 {
			break
		}
		b.Logf("  %-28s %+.1f", c.name, c.per)
	}
	for _, ep := range eps {
		run(b, ep, "true") // each still answers
	}
}

// holdForTrace, when BOXKITE_DENSITY_HOLD names a file and b.N > 1,
// creates it and waits until it is removed: an outside tracer (ftrace's
// kmem events) can stop while every sandbox is idle and alive.
func holdForTrace(b *testing.B) {
	p := os.Getenv("BOXKITE_DENSITY_HOLD")
	if p == "" || b.N == 1 {
		return
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	for {
		if _, err := os.Stat(p); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// driverHeap returns the test process's live heap in bytes, after a
// collection, and its goroutine count.
func driverHeap() (int64, int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), runtime.NumGoroutine()
}

// hostState is a snapshot of the host's tasks and kernel memory.
type hostState struct {
	tasks, kthreads int64
	byName          map[string]int64 // tasks by name, digits folded to N
	mem             map[string]int64 // /proc/meminfo, KiB
	slab            map[string]int64 // /proc/slabinfo, KiB of active objects per cache
}

func hostSnapshot(tb testing.TB) hostState {
	tb.Helper()
	s := hostState{byName: map[string]int64{}, mem: map[string]int64{}, slab: map[string]int64{}}
	// Memory first: walking /proc below makes proc inodes and dentries.
	readKV(tb, "/proc/meminfo", func(f []string) {
		v, _ := strconv.ParseInt(f[1], 10, 64)
		s.mem[strings.TrimSuffix(f[0], ":")] = v
	})
	readKV(tb, "/proc/slabinfo", func(f []string) {
		if len(f) < 4 || strings.HasPrefix(f[0], "#") || f[0] == "slabinfo" {
			return
		}
		active, _ := strconv.ParseInt(f[1], 10, 64)
		size, _ := strconv.ParseInt(f[3], 10, 64)
		s.slab[f[0]] += active * size / 1024
	})
	procs, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // ended meanwhile
		}
		// comm is between the first "(" and the last ")"; flags is the
		// 7th field after it.
		line := string(b)
		open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(line[end+1:])
		flags, _ := strconv.ParseUint(fields[6], 10, 64)
		s.tasks++
		name := foldDigits(line[open+1 : end])
		if flags&0x00200000 != 0 { // PF_KTHREAD
			s.kthreads++
			name = "[" + name + "]"
		}
		s.byName[name]++
	}
	return s
}

func readKV(tb testing.TB, path string, each func([]string)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 {
			each(fields)
		}
	}
}

// foldDigits replaces each run of digits with N: "jbd2/loop12-8" and
// "jbd2/loop3-8" count as one name.
func foldDigits(s string) string {
	var out strings.Builder
	digit := false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if !digit {
				out.WriteByte('N')
			}
			digit = true
			continue
		}
		digit = false
		out.WriteRune(r)
	}
	return out.String()
}

type countDiff struct {
	name string
	per  float64
}

// diffCounts lists the entries that changed by at least a tenth per
// sandbox, largest first.
func diffCounts(before, after map[string]int64, n int) []countDiff {
	var out []countDiff
	for k, v := range after {
		if per := float64(v-before[k]) / float64(n); per >= 0.1 || per <= -0.1 {
			out = append(out, countDiff{k, per})
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok && float64(v)/float64(n) >= 0.1 {
			out = append(out, countDiff{k, -float64(v) / float64(n)})
		}
	}
	slices.SortFunc(out, func(a, b countDiff) int { return cmp.Compare(b.per, a.per) })
	return out
}

// dropCaches asks the kernel to drop clean page cache and reclaimable
// slab, so both snapshots count what sandboxes hold, not what is cached.
func dropCaches(tb testing.TB) {
	tb.Helper()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0); err != nil {
		tb.Logf("drop caches: %v", err)
	}
	time.Sleep(2 * time.Second) // dentries and inodes are freed after an RCU grace period
}
