package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkColdFirstExec is the cold path of issue 27 inside the driver:
// a create with no warm pool, then the first exec (`true`) answered by the
// new jail's sidecar; the delete is outside the timing.
func BenchmarkColdFirstExec(b *testing.B) {
	d := newDriver(b)
	ctx := context.Background()
	i := 0
	var created, answered time.Duration
	for b.Loop() {
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
