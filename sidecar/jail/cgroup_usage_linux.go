package jail

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SetLimits replaces the limits of a cgroup made by Create, e.g. when a
// sandbox started in a warm pool is claimed for another size. Unlike
// Create, a zero field removes that limit rather than leaving it alone.
func (cg Cgroup) SetLimits(lim Limits) error {
	for _, dir := range cg.Dirs {
		var err error
		switch {
		case exists(filepath.Join(dir, "memory.max")) || exists(filepath.Join(dir, "pids.max")) && exists(filepath.Join(dir, "cgroup.controllers")):
			err = setV2(dir, lim)
		case exists(filepath.Join(dir, "cgroup.controllers")):
			// The controller-less cgroup2 directory of a hybrid host.
		default:
			err = setV1(dir, lim)
		}
		if err != nil {
			return fmt.Errorf("set cgroup limits: %w", err)
		}
	}
	return nil
}

func setV2(dir string, lim Limits) error {
	files := []struct{ name, value string }{
		{"memory.max", limitOrMax(lim.Memory)},
		{"memory.swap.max", "0"},
		{"pids.max", limitOrMax(lim.Pids)},
		{"cpu.max", "max " + strconv.Itoa(cpuPeriod)},
	}
	if lim.CPUs > 0 {
		files[3].value = strconv.FormatInt(cpuQuota(lim.CPUs), 10) + " " + strconv.Itoa(cpuPeriod)
	}
	for _, f := range files {
		err := writeCgroupFile(dir, f.name, f.value)
		if errors.Is(err, fs.ErrNotExist) && (f.name == "memory.swap.max" || f.name == "cpu.max") {
			continue // no swap accounting, or no cpu controller
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// setV1 sets whichever controllers' files dir has: one v1 hierarchy may
// carry one controller or several.
func setV1(dir string, lim Limits) error {
	if exists(filepath.Join(dir, "memory.limit_in_bytes")) {
		if err := setV1Memory(dir, lim.Memory); err != nil {
			return err
		}
	}
	if exists(filepath.Join(dir, "pids.max")) {
		if err := writeCgroupFile(dir, "pids.max", limitOrMax(lim.Pids)); err != nil {
			return err
		}
	}
	if exists(filepath.Join(dir, "cpu.cfs_quota_us")) {
		quota := "-1"
		if lim.CPUs > 0 {
			quota = strconv.FormatInt(cpuQuota(lim.CPUs), 10)
		}
		if err := writeCgroupFile(dir, "cpu.cfs_period_us", strconv.Itoa(cpuPeriod)); err != nil {
			return err
		}
		return writeCgroupFile(dir, "cpu.cfs_quota_us", quota)
	}
	return nil
}

// setV1Memory keeps memsw (memory plus swap, present only with swap
// accounting) at or above the memory limit throughout: it goes first
// when the limit grows, second when it shrinks.
func setV1Memory(dir string, limit int64) error {
	v := "-1"
	if limit > 0 {
		v = strconv.FormatInt(limit, 10)
	}
	memsw := func() error {
		err := writeCgroupFile(dir, "memory.memsw.limit_in_bytes", v)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	cur, err := readCgroupInt(dir, "memory.limit_in_bytes")
	if err != nil {
		return err
	}
	if grow := limit <= 0 || limit > cur; grow {
		if err := memsw(); err != nil {
			return err
		}
		return writeCgroupFile(dir, "memory.limit_in_bytes", v)
	}
	if err := writeCgroupFile(dir, "memory.limit_in_bytes", v); err != nil {
		return err
	}
	return memsw()
}

func limitOrMax(n int64) string {
	if n <= 0 {
		return "max"
	}
	return strconv.FormatInt(n, 10)
}

// Usage is what a cgroup's processes hold now.
type Usage struct {
	Memory     int64 // bytes charged: anonymous memory, page cache, kernel memory
	MemoryAnon int64 // of which anonymous (heap, stacks): what no other cgroup shares
	Pids       int64 // tasks, threads included; 0 without the pids controller
	CPUMicros  int64 // CPU time its processes used so far, in µs; 0 without CPU accounting
}

// Usage reads the cgroup's memory and task counts from whichever
// hierarchies have them (cgroup v2, or v1's memory and pids).
func (cg Cgroup) Usage() (Usage, error) {
	var u Usage
	var found bool
	for _, dir := range cg.Dirs {
		switch {
		case exists(filepath.Join(dir, "memory.current")): // v2
			found = true
			var err error
			if u.Memory, err = readCgroupInt(dir, "memory.current"); err != nil {
				return u, err
			}
			if u.MemoryAnon, err = readStat(dir, "anon"); err != nil {
				return u, err
			}
		case exists(filepath.Join(dir, "memory.usage_in_bytes")): // v1
			found = true
			var err error
			if u.Memory, err = readCgroupInt(dir, "memory.usage_in_bytes"); err != nil {
				return u, err
			}
			if u.MemoryAnon, err = readStat(dir, "rss"); err != nil {
				return u, err
			}
		}
		if n, ok, err := readCPU(dir); err != nil {
			return u, err
		} else if ok {
			u.CPUMicros = n
		}
		if exists(filepath.Join(dir, "pids.current")) {
			found = true
			n, err := readCgroupInt(dir, "pids.current")
			if err != nil {
				return u, err
			}
			u.Pids = n
		}
	}
	if !found {
		return u, errors.New("read cgroup usage: no memory or pids accounting")
	}
	return u, nil
}

// Pids reads the cgroup's task count alone: pids.current of the first of
// its directories that has one (one hierarchy carries the pids
// controller). It is what the server's host capacity reading needs of
// each sandbox, one file read where Usage probes every directory for
// its memory files too (bench/issue27/session10-warm10.md).
func (cg Cgroup) Pids() (int64, error) {
	_, n, err := cg.PidsFile()
	return n, err
}

// PidsFile is Pids that also returns the path of the pids.current it
// read, for a caller that reads it again with ReadPids: the directories
// without one (on cgroup v1, the memory hierarchy's comes first) are
// tried once, not at every reading.
func (cg Cgroup) PidsFile() (path string, n int64, err error) {
	for _, dir := range cg.Dirs {
		n, err := readCgroupInt(dir, "pids.current")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return filepath.Join(dir, "pids.current"), n, err
	}
	return "", 0, errors.New("read cgroup pids: no pids accounting")
}

// ReadPids reads a pids.current that PidsFile found: open, one read,
// close, where ReadSmallFile reads again for the end of the file. A
// cgroup file gives its whole value in one read of a buffer larger than
// it (the kernel formats it whole); so does the plain file of a test.
// A removed cgroup's file is an error with fs.ErrNotExist.
func ReadPids(path string) (int64, error) {
	fd, err := openRetry(path)
	if err != nil {
		return 0, fmt.Errorf("read cgroup pids: %w", &fs.PathError{Op: "open", Path: path, Err: err})
	}
	defer unix.Close(fd)
	var buf [32]byte // a task count, "max" or a newline: at most 20 bytes
	n, err := unix.Read(fd, buf[:])
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Read(fd, buf[:])
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("read cgroup pids: %w", &fs.PathError{Op: "read", Path: path, Err: err})
	case n == len(buf):
		return 0, fmt.Errorf("read cgroup pids: %s: longer than a count", path)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read cgroup pids: %w", err)
	}
	return v, nil
}

func readCgroupInt(dir, name string) (int64, error) {
	b, err := ReadSmallFile(filepath.Join(dir, name))
	if err != nil {
		return 0, fmt.Errorf("read cgroup %s: %w", name, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read cgroup %s: %w", name, err)
	}
	return n, nil
}

// readStat returns one key of memory.stat (0 when absent).
// readCPU reads the CPU time a cgroup's processes used so far, in µs:
// cpu.stat's usage_usec on cgroup v2 (every cgroup has it), cpuacct.usage
// (ns) on v1's cpuacct hierarchy; ok is false in a directory with neither.
func readCPU(dir string) (n int64, ok bool, err error) {
	switch {
	case exists(filepath.Join(dir, "cpu.stat")) && exists(filepath.Join(dir, "cgroup.controllers")):
		n, err = readStatFile(dir, "cpu.stat", "usage_usec")
		return n, err == nil, err
	case exists(filepath.Join(dir, "cpuacct.usage")):
		ns, err := readCgroupInt(dir, "cpuacct.usage")
		return ns / 1000, err == nil, err
	}
	return 0, false, nil
}

func readStat(dir, key string) (int64, error) { return readStatFile(dir, "memory.stat", key) }

// readStatFile reads the value of key in a cgroup's "key value" file.
func readStatFile(dir, name, key string) (int64, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return 0, fmt.Errorf("read cgroup %s: %w", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, sc.Err()
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// OOMKills reads how many processes the kernel's OOM killer killed in the
// cgroup at its memory limit since it was made: oom_kill of
// memory.events on cgroup v2, of memory.oom_control on v1 (a hybrid
// host's memory hierarchy). ok is false when no hierarchy has either.
func (cg Cgroup) OOMKills() (n int64, ok bool, err error) {
	for _, dir := range cg.Dirs {
		for _, name := range []string{"memory.events", "memory.oom_control"} {
			if !exists(filepath.Join(dir, name)) {
				continue
			}
			n, err := readStatFile(dir, name, "oom_kill")
			if err != nil {
				return 0, false, fmt.Errorf("read cgroup %s: %w", name, err)
			}
			return n, true, nil
		}
	}
	return 0, false, nil
}
