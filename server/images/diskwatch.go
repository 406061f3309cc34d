//go:build linux

package images

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// DefaultBuildDiskLimit bounds what a build writes into its image
// (WithBuildDiskLimit): install scripts run as the build's root, and the
// image's layers are on the host's disk.
const DefaultBuildDiskLimit = 10 << 30

// WithBuildDiskLimit stops a build whose layers grow past n bytes, and
// fails an import whose files come to more (image_import_too_big).
func WithBuildDiskLimit(n int64) Option { return func(m *Manager) { m.buildDiskLimit = n } }

// diskCheckEvery is how often a running build's layers are measured; a
// build writing fast passes its limit by what it writes in that time.
const diskCheckEvery = 2 * time.Second

// errBuildDisk fails a build whose layers passed the limit.
type errBuildDisk struct{ limit int64 }

func (e errBuildDisk) Error() string {
	return fmt.Sprintf("the build wrote more than %s into the image and was stopped", sizeText(e.limit))
}

func sizeText(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// watchDisk measures image id's layers every diskCheckEvery until ctx
// ends, and calls stop once they pass the limit. over reports whether
// it did.
func (m *Manager) watchDisk(ctx context.Context, id string, stop context.CancelFunc) (over func() bool) {
	var passed atomic.Bool
	go func() {
		t := time.NewTicker(diskCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if duSize(m.path(id, "upper")) > m.buildDiskLimit {
				passed.Store(true)
				stop()
				return
			}
		}
	}()
	return passed.Load
}
