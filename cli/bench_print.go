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
	fmt.Fprintln(t, "MEASURE\tN\tMIN\tP50\tP95\tP99\tMAX\tP50/F\tP95/F\tP99/F\tP50/B\tP50/F IN PHASE [95%]\tP50/B IN PHASE [95%]\t")
	for _, row := range benchRows(r) {
		printBenchRow(t, row)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	printPhaseFloors(w, r.Floors.Phases)
	tp := r.ExecThroughput
	fmt.Fprintf(w, "\nexec throughput: %.0f execs/s from %d workers (%d execs); host spawns %.0f/s on the same cores: %s of it\n",
		tp.PerSec, tp.Workers, tp.Execs, tp.HostSpawnsPerSec, ratio(tp.VsHost))
	printBenchMemory(w, r)
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

// benchRow is one line of the latency table.
type benchRow struct {
	name string
	l    *latency
}

// benchRows lists the latency table's lines in order; a nil latency is a
// measure this run did not take.
func benchRows(r *benchReport) []benchRow {
	rows := []benchRow{
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
			benchRow{fmt.Sprintf("idle: create (%d at once)", r.Concurrency), r.Idle.Create},
			benchRow{"idle: exec", r.Idle.Exec})
	}
	if sn := r.Snapshots; sn != nil {
		rows = append(rows,
			benchRow{"resume (freeze) → first exec", sn.Resume},
			benchRow{fmt.Sprintf("snapshot of %d MiB (%s)", sn.WorkspaceMiB, sn.Method), sn.Snapshot},
			benchRow{fmt.Sprintf("fork ×1 of %d MiB → first exec", sn.WorkspaceMiB), sn.Fork1},
			benchRow{fmt.Sprintf("fork ×8 of %d MiB → all exec", sn.WorkspaceMiB), sn.Fork8},
		)
	}
	return rows
}

// printBenchRow writes one line of the latency table.
func printBenchRow(t io.Writer, row benchRow) {
	l := row.l
	if l == nil {
		fmt.Fprintf(t, "%s\t-\t\t\t\t\t\t\t\t\t\t\t\t\n", row.name)
		return
	}
	bw := "-"
	if l.P50VsBwrap != nil {
		bw = ratio(*l.P50VsBwrap)
	}
	pf, pb := "-", "-"
	if v := l.VsPhase; v != nil {
		pf = ratioCIText(v.P50VsSpawn, v.P50SpawnCI)
		if v.P50VsBwrap != nil {
			pb = ratioCIText(*v.P50VsBwrap, v.P50BwrapCI)
		}
	}
	fmt.Fprintf(t, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.name, l.N,
		msText(l.MinMS), msText(l.P50MS), msText(l.P95MS), msText(l.P99MS), msText(l.MaxMS),
		ratio(l.P50VsSpawn), ratio(l.P95VsSpawn), ratio(l.P99VsSpawn), bw, pf, pb)
}

// printBenchMemory writes the idle memory and idle-run lines.
func printBenchMemory(w io.Writer, r *benchReport) {
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
		switch {
		case i.HostMemoryPerSandboxBytes != nil:
			fmt.Fprintf(w, "; host MemAvailable fell %s per sandbox", mib(*i.HostMemoryPerSandboxBytes))
		case i.HostMemoryUnmeasured != "":
			fmt.Fprintf(w, "; host memory per sandbox: %s", i.HostMemoryUnmeasured)
		}
		if i.HostThreadsPerSandbox > 0 {
			fmt.Fprintf(w, "; host threads rose %.1f per sandbox", i.HostThreadsPerSandbox)
		}
		fmt.Fprintln(w)
	}
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

// printPhaseFloors lists the floors each phase was divided by.
func printPhaseFloors(w io.Writer, phases []phaseFloors) {
	if len(phases) == 0 {
		return
	}
	fmt.Fprint(w, "\nF and B are the floors' p50s at the start and the end, pooled; IN PHASE divides by the floors taken in the measure's own phase, with the ratio's 95% bootstrap interval:\n")
	for _, p := range phases {
		if p.Spawn == nil {
			continue
		}
		fmt.Fprintf(w, "  %s (%s): F %s (n %d)", p.Phase, p.How, msText(p.Spawn.P50MS), p.Spawn.N)
		if p.Bwrap != nil {
			fmt.Fprintf(w, ", B %s (n %d)", msText(p.Bwrap.P50MS), p.Bwrap.N)
		}
		fmt.Fprintln(w)
	}
}

// ratioCIText is a ratio and its interval: "1.6× [1.5–1.8]".
func ratioCIText(v float64, ci *[2]float64) string {
	if ci == nil {
		return ratio(v)
	}
	return fmt.Sprintf("%s [%s–%s]", ratio(v), strconv.FormatFloat(ci[0], 'f', 1, 64), strconv.FormatFloat(ci[1], 'f', 1, 64))
}
