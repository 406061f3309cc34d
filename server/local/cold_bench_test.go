package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkColdFirstExec is the cold path of issue 27 inside the driver:
// a create with no warm pool, then the first exec (`true`) answered by the
// new jail's sidecar; the delete is outside the timing. prepared: with a
// prepared pool (Config.Prepared), refilled between creates.
func BenchmarkColdFirstExec(b *testing.B) {
	for _, prepared := range []int{0, 2} {
		b.Run(fmt.Sprintf("prepared=%d", prepared), func(b *testing.B) {
			d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin, Prepared: prepared})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
			benchFirstExec(b, d, prepared)
		})
	}
}

func benchFirstExec(b *testing.B, d *Driver, prepared int) {
	ctx := context.Background()
	i := 0
	var created, answered time.Duration
	for b.Loop() {
		b.StopTimer()
		for prepared > 0 && d.preparedReady() < prepared {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		id := fmt.Sprintf("c%d", i)
		i++
		t0 := time.Now()
		ep, err := d.Create(ctx, model.Spec{ID: id})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if res := run(b, ep, "true"); res.ExitCode != 0 {
			b.Fatalf("first exec: %+v", res)
		}
		created, answered = created+t1.Sub(t0), answered+time.Since(t0)
		b.StopTimer()
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(created.Microseconds())/1e3/float64(i), "create-ms/op")
	b.ReportMetric(float64(answered.Microseconds())/1e3/float64(i), "first-exec-ms/op")
}

// BenchmarkSidecarExec is an exec round trip at the driver's edge (issue
// 27, acceptance 2): `true` run by a jail's sidecar over one kept-alive
// connection, as the control plane's cached client sends it, without the
// control plane. spawn is F of `boxkite bench` in the same process: a
// bare spawn of /bin/true. sidecar-uname runs a program that is no shell
// builtin, as most commands are: through sh, a fork and a second exec.
func BenchmarkSidecarExec(b *testing.B) {
	b.Run("spawn", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for name, command := range map[string]string{"sidecar": "true", "sidecar-uname": "uname"} {
		b.Run(name, func(b *testing.B) {
			d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
			ep, err := d.Create(context.Background(), model.Spec{ID: "rtt"})
			if err != nil {
				b.Fatal(err)
			}
			c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", ep.Address)
			}}}
			for b.Loop() {
				if res := runWith(b, c, ep, command); res.ExitCode != 0 {
					b.Fatalf("exec %s: %+v", command, res)
				}
			}
		})
	}
}
