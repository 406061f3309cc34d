package idrange

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// testRanges returns a layout of count ranges on a registry directory of
// its own (the host's is shared with every other test run).
func testRanges(t *testing.T, dir string, count int) *Ranges {
	t.Helper()
	r, err := New(dir, DefaultFirst, count, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.reserved = map[int]bool{} // the host's own ids are not this test's business
	return r
}

// TestIDRangeLeases: two allocators on one registry, as two servers of a
// host, never lease one range twice, run out when every range is taken,
// and get a range back once its holder lets go of it.
func TestIDRangeLeases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ranges")
	a, b := testRanges(t, dir, 3), testRanges(t, dir, 3)
	var leases []*Lease
	for i, r := range []*Ranges{a, b, a} {
		l, err := r.Acquire("s")
		if err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		leases = append(leases, l)
	}
	var bases []int
	for _, l := range leases {
		bases = append(bases, l.base)
	}
	slices.Sort(bases)
	want := []int{DefaultFirst, DefaultFirst + jail.IDRange, DefaultFirst + 2*jail.IDRange}
	if diff := cmp.Diff(want, bases); diff != "" {
		t.Fatalf("leased bases (-want +got):\n%s", diff)
	}
	if l, err := b.Acquire("s"); !errors.Is(err, ErrNoIDRange) {
		t.Fatalf("a fourth lease of three ranges = %+v, %v; want ErrNoIDRange", l, err)
	}
	freed := leases[1].base
	if err := leases[1].Close(); err != nil {
		t.Fatal(err)
	}
	l, err := b.Acquire("s")
	if err != nil || l.base != freed {
		t.Fatalf("lease after one was let go = %+v, %v; want base %d", l, err, freed)
	}
	for _, l := range append(leases, l) {
		_ = l.Close()
	}
}

// TestIDRangeReserved: ranges overlapping ids the host hands out itself
// are never leased.
func TestIDRangeReserved(t *testing.T) {
	r := testRanges(t, t.TempDir(), 4)
	first := uint64(DefaultFirst)
	r.reserve(idSpan{first + jail.IDRange - 1, 2})     // the end of range 0 and the start of range 1
	r.reserve(idSpan{first + 3*jail.IDRange + 5, 1})   // one id of range 3
	r.reserve(idSpan{first + 4*jail.IDRange, 1 << 20}) // past the layout
	r.reserve(idSpan{100000, first - 100000})          // up to the layout's first id
	var got []int
	for {
		l, err := r.Acquire("s")
		if errors.Is(err, ErrNoIDRange) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		got = append(got, l.base)
	}
	if want := []int{DefaultFirst + 2*jail.IDRange}; !cmp.Equal(want, got) {
		t.Errorf("leased %v, want only %v", got, want)
	}
}

func TestIDRangeLayoutChecked(t *testing.T) {
	tests := []struct {
		name         string
		first, count int
		ok           bool
	}{
		{"default", DefaultFirst, DefaultCount, true},
		{"up to the last whole range", 1 << 31, (1<<31)/jail.IDRange - 1, true},
		{"one range too many", 1 << 31, (1 << 31) / jail.IDRange, false},
		{"not aligned", DefaultFirst + 1, 1, false},
		{"the host's own ids", 0, 1, false},
		{"no ranges", DefaultFirst, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(t.TempDir(), tt.first, tt.count, "")
			if (err == nil) != tt.ok {
				t.Errorf("New(%d, %d) = %v, want ok %v", tt.first, tt.count, err, tt.ok)
			}
		})
	}
}

// TestIDRangeRegistryChecked: a registry others could plant lease files
// in, or a symlink, is refused.
func TestIDRangeRegistryChecked(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{open, link} {
		if _, err := New(dir, DefaultFirst, 1, ""); err == nil {
			t.Errorf("New accepted the registry %s", dir)
		}
	}
}

func TestParseIDSpans(t *testing.T) {
	tests := []struct {
		name string
		in   string
		sub  bool
		want []idSpan
	}{
		{"subuid", "alice:100000:65536\n# comment\nbob:165536:65536\n", true, []idSpan{{100000, 65536}, {165536, 65536}}},
		{"subuid by uid", "1000:231072:65536\n", true, []idSpan{{231072, 65536}}},
		{"bad lines skipped", "x:1\nx:a:1\nx:1:0\nx:1:2:3\nx:-1:5\nok:7:1\n", true, []idSpan{{7, 1}}},
		{"passwd", "root:x:0:0:root:/root:/bin/bash\nsvc:x:1879048192:1:x:/:/bin/false\nbroken\n", false, []idSpan{{0, 1}, {1879048192, 1}}},
		{"group", "root:x:0:\nwheel:x:10:alice\n", false, []idSpan{{0, 1}, {10, 1}}},
		{"ids past 32 bits skipped", "big:x:4294967296:0::/:\n", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseIDSpans([]byte(tt.in), tt.sub)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(idSpan{})); diff != "" {
				t.Errorf("parseIDSpans (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseIDSpans(f *testing.F) {
	f.Add([]byte("alice:100000:65536\n"), true)
	f.Add([]byte("root:x:0:0:root:/root:/bin/bash\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, sub bool) {
		r := &Ranges{first: DefaultFirst, count: 8, reserved: map[int]bool{}}
		for _, s := range parseIDSpans(b, sub) {
			if s.count == 0 || s.first > 1<<32-1 || s.count > 1<<32-1 {
				t.Fatalf("span %+v out of 32-bit ids", s)
			}
			r.reserve(s)
		}
		for slot := range r.reserved {
			if slot < 0 || slot >= r.count {
				t.Fatalf("reserved slot %d outside the layout", slot)
			}
		}
	})
}

// BenchmarkIDLease leases a range and lets go of it, on a registry where
// half the ranges are taken, as Create and the jail's end do. The
// registry is on tmpfs, as DefaultDir (/run) is.
func BenchmarkIDLease(b *testing.B) {
	dir, err := os.MkdirTemp("/dev/shm", "boxkite-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	r, err := New(filepath.Join(dir, "ranges"), DefaultFirst, 64, "")
	if err != nil {
		b.Fatal(err)
	}
	r.reserved = map[int]bool{}
	for range 32 {
		l, err := r.Acquire("held")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
	}
	for b.Loop() {
		l, err := r.Acquire("b")
		if err != nil {
			b.Fatal(err)
		}
		_ = l.Close()
	}
}
