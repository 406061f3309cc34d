package idrange

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// Defaults of the range layout (the local driver's Config.IDRange*).
const (
	DefaultDir = "/run/boxkite/id-ranges"
	// DefaultFirst is 0x70000000: past the host's users, the
	// /etc/subuid ranges useradd hands out (from 100000) and the ranges
	// systemd-nspawn picks (0x80000–0x6fffffff), and below 2^31, where
	// software that takes ids for signed numbers goes wrong.
	DefaultFirst = 0x70000000
	// DefaultCount ranges end at 0x7fa00000, short of systemd's
	// foreign range (0x7ffe0000).
	DefaultCount = 4000
)

// ErrNoIDRange means every range of the layout is leased: the host is at
// capacity (Config.IDRangeCount sandboxes, pool members and builds).
// Acquire's error wraps it together with a *model.HostLimitError, which
// the control plane answers with 503 host_capacity.
var ErrNoIDRange = errors.New("no free host id range: every range of the layout is in use; delete sandboxes or raise the range count")

// Ranges leases host id ranges (see the package doc).
type Ranges struct {
	dir      *os.File // the lease directory, opened once: never resolved again
	first    int
	count    int
	reserved map[int]bool // indexes of ranges overlapping the host's own ids
	stateDir string       // written into each lease, for people reading the registry
}

// A Lease holds one range while its file is open and locked.
type Lease struct {
	f    *os.File
	base int // the range's first host id
}

// Base is the range's first host id.
func (l *Lease) Base() int { return l.base }

// File is the locked lease file, to hand to the jail's init, which holds
// the lease as long as it lives.
func (l *Lease) File() *os.File { return l.f }

// Close lets go of the lease (of this copy of the lock: a jail may hold
// another). A nil lease is fine.
func (l *Lease) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	return l.f.Close()
}

// New checks the layout, makes the registry directory if needed
// and reads which ranges the host's own ids rule out.
func New(dir string, first, count int, stateDir string) (*Ranges, error) {
	if first < jail.IDRange || first%jail.IDRange != 0 {
		return nil, fmt.Errorf("id ranges: first id %d is not a positive multiple of %d", first, jail.IDRange)
	}
	if count < 1 || first+(count-1)*jail.IDRange > jail.MaxHostIDBase {
		return nil, fmt.Errorf("id ranges: %d ranges from %d do not fit in 32-bit ids", count, first)
	}
	reg, err := openRegistry(dir)
	if err != nil {
		return nil, err
	}
	r := &Ranges{dir: reg, first: first, count: count, reserved: map[int]bool{}, stateDir: stateDir}
	for _, f := range []string{"/etc/subuid", "/etc/subgid", "/etc/passwd", "/etc/group"} {
		spans, err := readIDSpans(f)
		if err != nil {
			return nil, err
		}
		for _, s := range spans {
			r.reserve(s)
		}
	}
	return r, nil
}

// openRegistry makes the lease directory if needed and opens it, refusing
// a symlink or a directory that others than its owner (this process's
// user) could plant files in. Leases are opened relative to it.
func openRegistry(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("id ranges: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("id ranges: open %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("id ranges: %w", err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		f.Close()
		return nil, fmt.Errorf("id ranges: %s must belong to uid %d and be writable by it alone (owner %d, mode %o)",
			dir, os.Geteuid(), st.Uid, st.Mode&0o7777)
	}
	return f, nil
}

// reserve rules out every range overlapping s.
func (r *Ranges) reserve(s idSpan) {
	last := r.first + r.count*jail.IDRange - 1
	if s.count == 0 || s.first > uint64(last) || s.first+s.count <= uint64(r.first) {
		return
	}
	lo := max(0, (int64(s.first)-int64(r.first))/jail.IDRange)
	hi := min(int64(r.count-1), (int64(s.first+s.count-1)-int64(r.first))/jail.IDRange)
	for i := lo; i <= hi; i++ {
		r.reserved[int(i)] = true
	}
}

// Acquire leases a free range for the jail called name. It starts looking
// at a random range, so that servers starting sandboxes at once seldom try
// the same files.
func (r *Ranges) Acquire(name string) (*Lease, error) {
	start := rand.IntN(r.count)
	for i := range r.count {
		slot := (start + i) % r.count
		if r.reserved[slot] {
			continue
		}
		base := r.first + slot*jail.IDRange
		l, err := r.tryLease(base, name)
		if err != nil {
			return nil, err
		}
		if l != nil {
			return l, nil
		}
	}
	usable := int64(r.count - len(r.reserved))
	return nil, fmt.Errorf("%w: %w", ErrNoIDRange, &model.HostLimitError{
		Resource: api.HostIDRanges, Used: usable, Limit: usable,
		Hint: "remove sandboxes you no longer need, or give the server more host id ranges (--id-range-count; see docs/security.md, host id ranges)",
	})
}

// tryLease locks the lease file of the range at base; nil, nil when another
// process holds it.
func (r *Ranges) tryLease(base int, name string) (*Lease, error) {
	path := filepath.Join(r.dir.Name(), strconv.Itoa(base))
	fd, err := unix.Openat(int(r.dir.Fd()), strconv.Itoa(base), unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lease id range %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("lease id range %s: %w", path, err)
	}
	// Who holds it, for people reading the registry; the lock is what counts.
	note, _ := json.Marshal(map[string]any{"state_dir": r.stateDir, "sandbox": name, "server_pid": os.Getpid()})
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(note, '\n'), 0)
	}
	return &Lease{f: f, base: base}, nil
}

// An idSpan is a run of host ids the host hands out itself.
type idSpan struct{ first, count uint64 }

// readIDSpans reads the ids of a subordinate id file (name:first:count
// lines) or of /etc/passwd or /etc/group (an id in the third field). A
// missing file holds none.
func readIDSpans(path string) ([]idSpan, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("id ranges: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("id ranges: read %s: %w", path, err)
	}
	return parseIDSpans(b, strings.HasPrefix(filepath.Base(path), "sub")), nil
}

// parseIDSpans parses the lines of a subordinate id file (sub) or of a
// passwd or group file. Lines it cannot read are skipped: they give no
// ids to anyone.
func parseIDSpans(b []byte, sub bool) []idSpan {
	var spans []idSpan
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Split(line, ":")
		if sub {
			if len(fields) != 3 {
				continue
			}
			first, err1 := strconv.ParseUint(fields[1], 10, 32)
			count, err2 := strconv.ParseUint(fields[2], 10, 32)
			if err1 == nil && err2 == nil && count > 0 {
				spans = append(spans, idSpan{first, count})
			}
			continue
		}
		if len(fields) < 3 {
			continue
		}
		if id, err := strconv.ParseUint(fields[2], 10, 32); err == nil {
			spans = append(spans, idSpan{id, 1})
		}
	}
	return spans
}
