//go:build linux

package local

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// newPoolDriver returns a Driver with a warm pool of size on a fresh
// state dir, shut down when the test ends.
func newPoolDriver(t *testing.T, stateDir string, size int) *Driver {
	t.Helper()
	return newDriverWith(t, Config{StateDir: stateDir, SidecarPath: sidecarBin, WarmPool: size})
}

// waitPool waits until the pool holds n ready members and returns their names.
func waitPool(t *testing.T, d *Driver, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d.pool.mu.Lock()
		ready := append([]string(nil), d.pool.ready...)
		d.pool.mu.Unlock()
		if len(ready) == n {
			return ready
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm pool holds %d members after 30s, want %d", len(ready), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantPoolMetrics checks the pool's fill as /metrics shows it.
func wantPoolMetrics(t *testing.T, d *Driver, ready, target int) {
	t.Helper()
	var b strings.Builder
	d.WriteMetrics(&b)
	for _, want := range []string{
		fmt.Sprintf("\nboxkite_local_warm_pool_ready %d\n", ready),
		fmt.Sprintf("\nboxkite_local_warm_pool_target %d\n", target),
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", strings.TrimSpace(want), b.String())
		}
	}
}

// statusWith sends an exec with token and returns the status.
func statusWith(t *testing.T, socket, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://sidecar/exec", bytes.NewReader([]byte(`{"command":"true"}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, token)
	resp, err := unixClient(socket).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWarmPoolClaim is issue 6's acceptance 4: a sandbox handed out from
// the warm pool has an empty workspace, a new token (the pool's no longer
// works) and no processes from before, and is jailed like a fresh one.
func TestWarmPoolClaim(t *testing.T) {
	t.Parallel()
	d := newPoolDriver(t, t.TempDir(), 1)
	member := waitPool(t, d, 1)[0]
	before, err := readState(filepath.Join(d.poolDir(), member))
	if err != nil {
		t.Fatal(err)
	}
	wantPoolMetrics(t, d, 1, 1)

	ep := create(t, d, "warm")
	after, err := readState(d.sandboxDir("warm"))
	if err != nil {
		t.Fatal(err)
	}
	if after.PID != before.PID || after.StartTime != before.StartTime {
		t.Fatalf("sandbox runs as pid %d, the pool member as %d: not claimed from the pool", after.PID, before.PID)
	}
	if _, err := os.Stat(filepath.Join(d.poolDir(), member)); !os.IsNotExist(err) {
		t.Errorf("pool member's directory still exists after the claim (%v)", err)
	}
	if ep.Token == before.Token || after.Token != ep.Token || after.Socket != ep.Address {
		t.Errorf("endpoint %+v, state %+v: want a new token, recorded with the new socket", ep, after)
	}
	if got := statusWith(t, ep.Address, before.Token); got != http.StatusUnauthorized {
		t.Errorf("the pool token after the claim: status %d, want 401", got)
	}
	if got := run(t, ep, "find /workspace "+jail.OutputsDir+" /tmp -mindepth 1"); got.ExitCode != 0 || got.Stdout != "" {
		t.Errorf("claimed sandbox's dirs: %+v, want all empty", got)
	}
	ps := run(t, ep, "ps -e -o pid=,comm=")
	if diff := cmp.Diff([]string{"boxkite-sidecar", "ps"}, commands(ps.Stdout)); diff != "" { // no sh: sidecar/direct.go
		t.Errorf("processes in the claimed sandbox (-want +got):\n%s", diff)
	}

	// It is a sandbox now, and the pool refills; List shows sandboxes only.
	refilled := waitPool(t, d, 1)[0]
	if refilled == member {
		t.Fatal("the pool handed out a member and still holds it")
	}
	obs, err := d.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 1 || obs[0].ID != "warm" || !obs[0].Alive || obs[0].Endpoint.Token != ep.Token {
		t.Errorf("List() = %+v, want only the claimed sandbox, alive, with its new token", obs)
	}

	// The claimed sandbox is jailed like any other.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, p := range isolationProbes(d.cfg.StateDir, filepath.Join(d.sandboxDir("warm"), diskMount, "workspace"), ln.Addr().(*net.TCPAddr).Port) {
		t.Run(p.name, func(t *testing.T) {
			res := run(t, ep, p.command)
			if (res.ExitCode == 0) != p.ok {
				t.Fatalf("%q exited %d, want success %v; stdout %q stderr %q", p.command, res.ExitCode, p.ok, res.Stdout, res.Stderr)
			}
			if p.stdout != nil {
				if why := p.stdout(res.Stdout); why != "" {
					t.Errorf("%q: %s", p.command, why)
				}
			}
			if p.after != nil {
				p.after(t)
			}
		})
	}

	if err := d.Delete(t.Context(), "warm"); err != nil {
		t.Fatal(err)
	}
	if alive(after) {
		t.Error("claimed sandbox's init survives Delete")
	}
}

// commands returns the command names of `ps -o pid=,comm=` output.
func commands(ps string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(ps), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			out = append(out, f[1])
		}
	}
	return out
}

// TestWarmPoolSizes claims members for other sizes (limits re-applied)
// and leaves what does not fit to a cold start.
func TestWarmPoolSizes(t *testing.T) {
	t.Parallel()
	d := newPoolDriver(t, t.TempDir(), 2)
	if d.cgroups == nil {
		t.Fatal("no cgroups: run as root")
	}
	tests := []struct {
		spec model.Spec
		warm bool
	}{
		{model.Spec{ID: "medium", Size: api.SizeMedium}, true},
		{model.Spec{ID: "small", Size: api.SizeSmall}, true},
		{model.Spec{ID: "bigdisk", StorageGB: 1}, false},
	}
	for _, tt := range tests {
		pids := map[int]bool{}
		for _, name := range waitPool(t, d, 2) {
			st, err := readState(filepath.Join(d.poolDir(), name))
			if err != nil {
				t.Fatal(err)
			}
			pids[st.PID] = true
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		ep, err := d.Create(ctx, tt.spec)
		cancel()
		if err != nil {
			t.Fatalf("Create(%+v): %v", tt.spec, err)
		}
		st, err := readState(d.sandboxDir(tt.spec.ID))
		if err != nil {
			t.Fatal(err)
		}
		if pids[st.PID] != tt.warm {
			t.Errorf("%s: from the pool = %v, want %v", tt.spec.ID, pids[st.PID], tt.warm)
		}
		lim, _ := d.limits(tt.spec.Size)
		if got := run(t, ep, "echo ok"); got.Stdout != "ok\n" {
			t.Errorf("%s: exec = %+v", tt.spec.ID, got)
		}
		var memFiles int
		for _, dir := range st.Cgroup.Dirs {
			for _, f := range []string{"memory.max", "memory.limit_in_bytes"} {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
					memFiles++
					if got := strings.TrimSpace(string(b)); got != strconv.FormatInt(lim.Memory, 10) {
						t.Errorf("%s: %s = %s, want %d", tt.spec.ID, f, got, lim.Memory)
					}
				}
			}
		}
		if memFiles == 0 {
			t.Errorf("%s: no memory limit file in %v", tt.spec.ID, st.Cgroup.Dirs)
		}
		stats, err := d.Stats(t.Context(), tt.spec.ID)
		if err != nil || stats.MemoryBytes <= 0 || stats.Pids < 2 {
			t.Errorf("%s: Stats() = %+v, %v; want memory and at least the sidecar's two threads", tt.spec.ID, stats, err)
		}
	}
}

func TestWarmPoolFits(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	tests := []struct {
		name string
		spec model.Spec
		want bool
	}{
		{"default", model.Spec{ID: "a"}, true},
		{"small", model.Spec{ID: "a", Size: api.SizeSmall}, true},
		{"large", model.Spec{ID: "a", Size: api.SizeLarge}, true},
		{"default storage spelt out", model.Spec{ID: "a", StorageGB: DefaultStorageGB}, true},
		{"other storage", model.Spec{ID: "a", StorageGB: 2}, false},
		{"image", model.Spec{ID: "a", ImageRoot: "/images/x"}, false},
		{"volume", model.Spec{ID: "a", Volumes: []model.VolumeMount{{}}}, false},
		{"unknown size", model.Spec{ID: "a", Size: "huge"}, false},
	}
	for _, tt := range tests {
		if got := d.fits(tt.spec); got != tt.want {
			t.Errorf("%s: fits(%+v) = %v, want %v", tt.name, tt.spec, got, tt.want)
		}
	}
}

// TestWarmPoolCleanup: Shutdown deletes the members, and a new driver
// deletes those a crashed one left.
func TestWarmPoolCleanup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	crashed, err := New(Config{StateDir: dir, SidecarPath: sidecarBin, WarmPool: 2})
	if err != nil {
		t.Fatal(err)
	}
	var left []state
	for _, name := range waitPool(t, crashed, 2) {
		st, err := readState(filepath.Join(crashed.poolDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, st)
	}
	crashed.pool.cancel() // it stops filling, as if killed, and deletes nothing
	<-crashed.pool.done

	d := newPoolDriver(t, dir, 1)
	for _, st := range left {
		if alive(st) {
			t.Errorf("member pid %d of the previous driver survives New", st.PID)
		}
	}
	waitPool(t, d, 1)
	if err := d.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(d.poolDir())
	if err != nil || len(entries) != 0 {
		t.Errorf("pool dir after Shutdown: %v, %v; want empty", entries, err)
	}
	if _, err := d.Create(t.Context(), model.Spec{ID: "late"}); err != nil {
		t.Errorf("Create after Shutdown (cold): %v", err)
	}
}

// TestReleaseStopsPools: Release stops both pools filling, as the
// process dying would, and deletes nothing; before, a member the old
// driver started after the new one cleared the pool outlived both.
func TestReleaseStopsPools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, err := New(Config{StateDir: dir, SidecarPath: sidecarBin, WarmPool: 1, Prepared: 1})
	if err != nil {
		t.Fatal(err)
	}
	members := waitPool(t, old, 1)
	if _, ok, err := old.ClaimWarm(t.Context(), model.Spec{ID: "taken"}, nil, nil); !ok || err != nil {
		t.Fatalf("ClaimWarm = %v, %v", ok, err)
	}
	old.Release() // the pool is refilling now
	for name, done := range map[string]chan struct{}{"warm": old.pool.done, "prepared": old.prepared.done} {
		select {
		case <-done:
		default:
			t.Errorf("the %s pool still fills after Release", name)
		}
	}
	if _, err := os.Stat(filepath.Join(old.poolDir(), members[0])); err == nil {
		t.Errorf("claimed member %s is still in the pool directory", members[0])
	}

	d := newPoolDriver(t, dir, 0) // clears what the old driver's pools left
	entries, err := os.ReadDir(d.poolDir())
	if err != nil || len(entries) != 0 {
		t.Errorf("pool dir after a new driver: %v, %v; want empty", entries, err)
	}
	if err := d.Delete(t.Context(), "taken"); err != nil {
		t.Errorf("delete the claimed sandbox: %v", err)
	}
}

// BenchmarkWarmCreate reports what Create takes when it claims a pool
// member (claim-ms/op); each round waits for the pool to refill first.
func BenchmarkWarmCreate(b *testing.B) {
	d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin, WarmPool: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	ctx := context.Background()
	var claiming time.Duration
	i := 0
	for b.Loop() {
		for {
			d.pool.mu.Lock()
			n := len(d.pool.ready)
			d.pool.mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		id := fmt.Sprintf("w%d", i)
		i++
		start := time.Now()
		if _, err := d.Create(ctx, model.Spec{ID: id}); err != nil {
			b.Fatal(err)
		}
		claiming += time.Since(start)
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(claiming.Microseconds())/1000/float64(i), "claim-ms/op")
}

// TestWarmPoolDisks: a member's disk is opened for SyncDisk when the
// member is started, and the claim hands that file over to the sandbox
// (under its own path) instead of opening and flushing the disk while
// the create waits; deleting either closes it.
func TestWarmPoolDisks(t *testing.T) {
	t.Parallel()
	d := newPoolDriver(t, t.TempDir(), 1)
	if d.storage != StorageLoop {
		t.Fatalf("storage %v, want loop disks (tests run as root)", d.storage)
	}
	member := waitPool(t, d, 1)[0]
	testDiskHandedOver(t, d, member, "warm")
}

// testDiskHandedOver checks that the ready pool entry from (a warm member
// or a prepared slot) holds its disk open, that creating id hands that
// file over to the sandbox, and that SyncDisk and Delete work on it.
func testDiskHandedOver(t *testing.T, d *Driver, from, id string) {
	t.Helper()
	handles := func(name string) []string {
		d.disks.mu.Lock()
		defer d.disks.mu.Unlock()
		var names []string
		for _, f := range d.disks.files[name] {
			names = append(names, f.Name())
		}
		return names
	}
	if diff := cmp.Diff([]string{filepath.Join(d.poolDir(), from, diskMount)}, handles(from)); diff != "" {
		t.Fatalf("disk files of pool entry %s (-want +got):\n%s", from, diff)
	}

	ep := create(t, d, id)
	if got := handles(from); got != nil {
		t.Errorf("pool entry %s's files after the create: %q, want none", from, got)
	}
	if diff := cmp.Diff([]string{filepath.Join(d.sandboxDir(id), diskMount)}, handles(id)); diff != "" {
		t.Errorf("disk files of the created sandbox (-want +got):\n%s", diff)
	}
	if res := run(t, ep, "echo x > /workspace/f"); res.ExitCode != 0 {
		t.Fatalf("write: %+v", res)
	}
	if err := d.SyncDisk(t.Context(), id); err != nil {
		t.Errorf("SyncDisk of the created sandbox: %v", err)
	}
	if err := d.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if got := handles(id); got != nil {
		t.Errorf("disk files after Delete: %q, want none", got)
	}
}
