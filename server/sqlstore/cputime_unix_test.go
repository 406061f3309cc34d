//go:build unix

package sqlstore_test

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user and system) the process has used: a
// store call's wall includes SQLite's fsyncs, which take no CPU.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writtenBytes is the bytes the process has written through write system
// calls (wchar in /proc/self/io: SQLite's WAL frames and journal), or 0
// where there is no such file.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("wchar: ")); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n
		}
	}
	return 0
}
