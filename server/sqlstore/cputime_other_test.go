//go:build !unix

package sqlstore_test

import (
	"testing"
	"time"
)

// processCPU is 0 where getrusage is missing: the benchmarks report no
// CPU time there.
func processCPU(*testing.B) time.Duration { return 0 }
