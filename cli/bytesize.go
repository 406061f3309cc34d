package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSizeValue is a flag holding a byte count written as a number with an
// optional binary unit: 4096, 512K, 16M, 1G (K, M and G may also be
// written KiB, MiB, GiB, and in lower case).
type byteSizeValue struct{ n *int64 }

func newByteSizeValue(p *int64, def int64) *byteSizeValue {
	*p = def
	return &byteSizeValue{n: p}
}

func (v *byteSizeValue) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}

func (v *byteSizeValue) String() string {
	if v.n == nil || *v.n == 0 {
		return ""
	}
	return compactByteSize(*v.n)
}

func (v *byteSizeValue) Type() string { return "size" }

// byteUnits are the suffixes parseByteSize takes, longest first.
var byteUnits = []struct {
	suffix string
	shift  uint
}{
	{"gib", 30}, {"mib", 20}, {"kib", 10}, {"g", 30}, {"m", 20}, {"k", 10}, {"b", 0},
}

// parseByteSize reads a positive byte count such as 4096, 512K or 16MiB.
func parseByteSize(s string) (int64, error) {
	num, shift := strings.ToLower(strings.TrimSpace(s)), uint(0)
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, shift = rest, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("invalid size %q: want a positive number of bytes, optionally with K, M or G (1024-based)", s)
	}
	return n << shift, nil
}

// compactByteSize writes n in the largest unit that divides it.
func compactByteSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"G", 30}, {"M", 20}, {"K", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
