package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// snapshotBench is the result of --snapshots: pause and resume,
// snapshots and forks of a sandbox whose workspace holds WorkspaceMiB.
type snapshotBench struct {
	WorkspaceMiB int      `json:"workspace_mib"`
	Method       string   `json:"method"`               // how the server copied: reflink or copy
	Resume       *latency `json:"resume_to_first_exec"` // a freeze pause's resume, to its first exec
	Snapshot     *latency `json:"snapshot"`             // of the workspace, to the answer
	Fork1        *latency `json:"fork1_to_first_exec"`  // fork ×1, to the child's first exec
	Fork8        *latency `json:"fork8_to_first_exec"`  // fork ×8, until all eight answered an exec
}

// benchWorkspaceMiB is the workspace --snapshots snapshots and forks.
const benchWorkspaceMiB = 100

// measureSnapshots runs rounds of each measure on one sandbox holding a
// 100 MiB file; nil when the sandbox could not be made.
func (b *bench) measureSnapshots(ctx context.Context, rounds int, f, bw float64) *snapshotBench {
	b.prog.phase("snapshots", 4*rounds)
	sb, err := b.c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: b.nextLabel(), LifetimeMinutes: benchLifetime})
	if err != nil {
		b.fail("snapshots: create: %v", err)
		return nil
	}
	b.track(sb.ID)
	fill := fmt.Sprintf("head -c %dM /dev/urandom > /workspace/bench.bin", benchWorkspaceMiB)
	if res, err := b.c.Exec(ctx, sb.ID, api.ExecRequest{Command: fill, Timeout: 300}); err != nil || res.ExitCode != 0 {
		b.fail("snapshots: fill the workspace: %v %+v", err, res)
		return nil
	}
	out := &snapshotBench{WorkspaceMiB: benchWorkspaceMiB}
	var resume, snap, fork1, fork8 samples
	// Bracketed like the creates: a resume, a snapshot or a fork leaves
	// work behind it that a floor right after would meet.
	p := b.phase("snapshots", floorsBracketed, 0)
	b.bracket(ctx, p)
	for range rounds {
		b.roundResume(ctx, sb.ID, &resume)
		b.prog.step()
		if sn := b.roundSnapshot(ctx, sb.ID, &snap); sn != nil {
			out.Method = sn.Method
		}
		b.prog.step()
		b.roundFork(ctx, sb.ID, 1, &fork1)
		b.prog.step()
		b.roundFork(ctx, sb.ID, 8, &fork8)
		b.prog.step()
		if ctx.Err() != nil {
			break
		}
	}
	b.bracket(ctx, p)
	out.Resume, out.Snapshot = summarize(resume.all(), f, bw).in(p), summarize(snap.all(), f, bw).in(p)
	out.Fork1, out.Fork8 = summarize(fork1.all(), f, bw).in(p), summarize(fork8.all(), f, bw).in(p)
	return out
}

// roundResume pauses id (freeze) and times its resume to a first exec.
func (b *bench) roundResume(ctx context.Context, id string, s *samples) {
	if _, err := b.c.PauseSandbox(ctx, id, api.PauseFreeze); err != nil {
		b.fail("pause %s: %v", id, err)
		return
	}
	start := time.Now()
	if _, err := b.c.ResumeSandbox(ctx, id); err != nil {
		b.fail("resume %s: %v", id, err)
		return
	}
	if err := b.exec(ctx, id); err != nil {
		b.fail("exec after resume in %s: %v", id, err)
		return
	}
	s.add(time.Since(start))
}

// roundSnapshot times a snapshot of id, then deletes it (untimed) so the
// account's limit is never reached.
func (b *bench) roundSnapshot(ctx context.Context, id string, s *samples) *api.Snapshot {
	start := time.Now()
	sn, err := b.c.CreateSnapshot(ctx, id, "")
	if err != nil {
		b.fail("snapshot %s: %v", id, err)
		return nil
	}
	s.add(time.Since(start))
	if err := b.c.DeleteSnapshot(ctx, sn.ID); err != nil {
		b.fail("delete snapshot %s: %v", sn.ID, err)
	}
	return sn
}

// roundFork times a fork of id into n children until every child answered
// an exec, then deletes them (untimed).
func (b *bench) roundFork(ctx context.Context, id string, n int, s *samples) {
	start := time.Now()
	children, err := b.c.ForkSandbox(ctx, id, n)
	if err != nil {
		b.fail("fork %s ×%d: %v", id, n, err)
		return
	}
	for _, ch := range children {
		b.track(ch.ID)
	}
	errs := make([]error, len(children))
	_ = parallel(ctx, len(children), len(children), func(ctx context.Context, i int) error {
		errs[i] = b.exec(ctx, children[i].ID)
		return nil
	})
	ok := true
	for i, err := range errs {
		if err != nil {
			b.fail("first exec in fork child %s: %v", children[i].ID, err)
			ok = false
		}
	}
	if ok {
		s.add(time.Since(start))
	}
	for _, ch := range children {
		if err := b.delete(ctx, ch.ID); err != nil {
			b.fail("delete fork child %s: %v", ch.ID, err)
		}
	}
}
