//go:build !unix

package sqlstore_test

import (
	"testing"
	"time"
)

// processCPU is 0 where getrusage is missing: the benchmarks report no
// CPU time there.
func processCPU(*testing.B) time.Duration { return 0 }

// writtenBytes is 0: not counted here.
func writtenBytes() int64 { return 0 }
