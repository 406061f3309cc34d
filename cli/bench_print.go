package cli

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
)

// printBench writes the report as aligned tables.
func printBench(w io.Writer, r *benchReport) error {
	fmt.Fprintf(w, "boxkite bench: %d sandboxes, %d execs each, %d at once, against %s\n", r.Sandboxes, r.Execs, r.Concurrency, r.Server)
	fmt.Fprintf(w, "host: %d CPUs, %s/%s, kernel %s, virtualization %s", r.Host.CPUs, r.Host.OS, r.Host.Arch, r.Host.Kernel, cmp.Or(r.Host.Virtualization, "unknown"))
	if r.Host.LoadStart != nil && r.Host.LoadEnd != nil {
		fmt.Fprintf(w, ", load average %.2f at the start, %.2f at the end", r.Host.LoadStart[0], r.Host.LoadEnd[0])
	}
	fmt.Fprint(w, "\n")
	if p := r.WarmPool; p != nil {
		fmt.Fprintf(w, "warm pool: %d of %d ready at the start (waited %d ms), %d at the end (waited %d ms)\n", p.Ready, p.Target, p.WaitedMS, p.ReadyEnd, p.WaitedEndMS)
	}
	fmt.Fprint(w, "\n")
	t := newTable(w)
	fmt.Fprintln(t, "MEASURE\tN\tMIN\tP50\tP95\tP99\tMAX\tP50/F\tP95/F\tP99/F\tP50/B\t")
	rows := []struct {
		name string
		l    *latency
	}{
		{"floor F: spawn /bin/true", r.Floors.Spawn},
		{"floor B: bwrap true", r.Floors.Bwrap},
		{"boxkite version (CLI start)", r.CLIStart},
		{"create", r.Create},
		{"create → first exec", r.CreateToFirstExec},
		{fmt.Sprintf("burst create (%d at once)", r.Concurrency), r.BurstCreate},
		{"burst create → first exec", r.BurstCreateToFirstExec},
		{"exec round trip (true)", r.Exec},
		{"file write 1 MiB", r.FileWrite},
		{"file read 1 MiB", r.FileRead},
		{"file write+read 4 KiB", r.FileWriteRead4KiB},
		{"delete", r.Delete},
	}
	if r.Idle != nil {
		rows = append(rows,
			struct {
				name string
				l    *latency
			}{fmt.Sprintf("idle: create (%d at once)", r.Concurrency), r.Idle.Create},
			struct {
				name string
				l    *latency
			}{"idle: exec", r.Idle.Exec})
	}
	if sn := r.Snapshots; sn != nil {
		for _, x := range []struct {
			name string
			l    *latency
		}{
			{"resume (freeze) → first exec", sn.Resume},
			{fmt.Sprintf("snapshot of %d MiB (%s)", sn.WorkspaceMiB, sn.Method), sn.Snapshot},
			{fmt.Sprintf("fork ×1 of %d MiB → first exec", sn.WorkspaceMiB), sn.Fork1},
			{fmt.Sprintf("fork ×8 of %d MiB → all exec", sn.WorkspaceMiB), sn.Fork8},
		} {
			rows = append(rows, struct {
				name string
				l    *latency
			}(x))
		}
	}
	for _, row := range rows {
		l := row.l
		if l == nil {
			fmt.Fprintf(t, "%s\t-\t\t\t\t\t\t\t\t\t\t\n", row.name)
			continue
		}
		bw := "-"
		if l.P50VsBwrap != nil {
			bw = ratio(*l.P50VsBwrap)
		}
		fmt.Fprintf(t, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.name, l.N,
			msText(l.MinMS), msText(l.P50MS), msText(l.P95MS), msText(l.P99MS), msText(l.MaxMS),
			ratio(l.P50VsSpawn), ratio(l.P95VsSpawn), ratio(l.P99VsSpawn), bw)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	tp := r.ExecThroughput
	fmt.Fprintf(w, "\nexec throughput: %.0f execs/s from %d workers (%d execs); host spawns %.0f/s on the same cores: %s of it\n",
		tp.PerSec, tp.Workers, tp.Execs, tp.HostSpawnsPerSec, ratio(tp.VsHost))
	if m := r.IdleMemory; m != nil {
		fmt.Fprintf(w, "idle memory per sandbox (cgroup): p50 %s, mean %s, max %s; anonymous p50 %s; threads p50 %d, max %d (%d sandboxes)\n",
			mib(m.P50Bytes), mib(m.MeanBytes), mib(m.MaxBytes), mib(m.AnonP50Bytes), m.ThreadsP50, m.ThreadsMax, m.Sandboxes)
	} else {
		fmt.Fprintln(w, "idle memory per sandbox: not reported by this server")
	}
	if i := r.Idle; i != nil {
		fmt.Fprintf(w, "idle: %d of %d sandboxes created, %d answered an exec", i.Created, i.Requested, i.Answered)
		if i.Memory != nil {
			fmt.Fprintf(w, "; memory p50 %s, mean %s (anonymous mean %s); threads p50 %d, max %d",
				mib(i.Memory.P50Bytes), mib(i.Memory.MeanBytes), mib(i.Memory.AnonMeanBytes), i.Memory.ThreadsP50, i.Memory.ThreadsMax)
		}
		if i.HostMemoryPerSandboxBytes > 0 {
			fmt.Fprintf(w, "; host MemAvailable fell %s per sandbox", mib(i.HostMemoryPerSandboxBytes))
		}
		if i.HostThreadsPerSandbox > 0 {
			fmt.Fprintf(w, "; host threads rose %.1f per sandbox", i.HostThreadsPerSandbox)
		}
		fmt.Fprintln(w)
	}
	if len(r.Failures) == 0 {
		fmt.Fprintln(w, "failures: none")
		return nil
	}
	fmt.Fprintf(w, "failures: %d\n", len(r.Failures))
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  %s\n", f)
	}
	return nil
}

func msText(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64) + "ms"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "ms"
}

func ratio(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "×" }
