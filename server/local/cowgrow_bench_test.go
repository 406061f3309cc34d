//go:build linux

package local

import (
	"context"
	"testing"
)

// BenchmarkAdmitWriteClonePool is an upload's admission on a driver with
// the clone pool: a statfs of the host's filesystem, and since the pool
// follows the host (cowgrow_test.go) one of the pool's too, with the
// check that the host has not outgrown it. Growing is never on this
// path unless the pool is below its watermark while the host has grown.
func BenchmarkAdmitWriteClonePool(b *testing.B) {
	d := newCloneDriver(b)
	ctx := context.Background()
	for b.Loop() {
		if err := d.AdmitWrite(ctx, ""); err != nil {
			b.Fatal(err)
		}
	}
}
