package envd

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem"
)

// BenchmarkListDirHeld measures what a listing at its output limit
// (maxListOutput of find's output, entries of 40-byte paths) allocates
// once its output is in hand: the entries parsed and sorted, and the
// answer marshalled as Connect's JSON codec does (protojson): the live
// heap per byte of output (live-bytes/output-byte), against the 16 a
// listing reserves (heldOutput).
func BenchmarkListDirHeld(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < maxListOutput-200; i++ {
		fmt.Fprintf(&sb, "f\x00%d\x00644\x00user\x00user\x001733520000.1234567890\x00\x00./dir/file-%029d\x00", i, i)
	}
	out := sb.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(out)))
	live := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	var peak float64
	for b.Loop() {
		base := live()
		entries, err := parseEntries(Home, out)
		if err != nil {
			b.Fatal(err)
		}
		sortEntries(entries)
		js, err := protojson.Marshal(&filesystem.ListDirResponse{Entries: entries})
		if err != nil {
			b.Fatal(err)
		}
		// The output (held by the caller), the entries and the answer
		// are live together until the answer is written.
		peak = max(peak, (live()-base+float64(len(out)))/float64(len(out)))
		runtime.KeepAlive(entries)
		runtime.KeepAlive(js)
	}
	b.ReportMetric(peak, "live-bytes/output-byte")
}
