//go:build linux

package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// TestSmallDiskOnClonePool: sandboxes asking for less than 512 MiB of
// storage start on the clone pool and can write. mkfs.ext4 gave such
// images 1 KiB blocks, which the pool's direct-I/O loop devices (4 KiB
// sectors) refuse to mount: every create with storage_gb below 0.5
// failed with 502 sandbox_operation_failed.
func TestSmallDiskOnClonePool(t *testing.T) {
	d := newCloneDriver(t)
	if d.data == d.cfg.StateDir {
		t.Fatal("no clone pool")
	}
	for i, gb := range []float64{0.01, 0.25, 0.3} {
		id := fmt.Sprintf("small%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ep, err := d.Create(ctx, model.Spec{ID: id, StorageGB: gb})
		cancel()
		if err != nil {
			t.Errorf("create with storage_gb %v: %v", gb, err)
			continue
		}
		if res := run(t, ep, "echo ok > /workspace/f && cat /workspace/f"); res.Stdout != "ok\n" {
			t.Errorf("storage_gb %v: %+v", gb, res)
		}
	}
}
