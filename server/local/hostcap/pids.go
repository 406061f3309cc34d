//go:build linux

package hostcap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// Pids caches each sandbox's pids.current by its directory, for the
// driver's Source.SandboxTasks (Sum). Its zero value is ready.
//
// Each one's pids.current is found once, from its state (the driver's
// find), and then read alone at every reading: a reading during a burst
// of creates, or with thousands of idle sandboxes, is one small read per
// sandbox, not a state file's decode and a failed open of the memory
// hierarchy's pids.current besides (bench/issue27/session14-cap14.md). A
// cached file that can no longer be read (the cgroup was removed: the
// sandbox ended, was paused with filesystem, or is being restarted) sends
// the reading back to find.
type Pids struct {
	mu    sync.Mutex // held by one Sum at a time
	files map[pidsKey]pidsFile
	gen   uint64   // Sum's readings; an entry not seen in the latest is dropped
	names []string // readDirNames' result and buffer, reused
	buf   []byte
}

// pidsKey is a sandbox's directory: its name under the parent Sum was
// given at index parent.
type pidsKey struct {
	parent int
	name   string
}

type pidsFile struct {
	path string // the cgroup's pids.current
	seen uint64 // the reading that last read it
}

// Sum sums the tasks of the sandboxes whose directories are in parents
// (the sandboxes' directory, the warm pool's…) and counts those it
// summed: the ones find gives a cgroup's pids.current for (its path and
// its count now; ok false for one not started yet, paused with
// filesystem, or without cgroups). A ctx that ends returns what was
// summed so far, keeping every cached file.
func (p *Pids) Sum(ctx context.Context, parents []string, find func(dir string) (path string, n int64, ok bool)) (tasks, sandboxes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files = map[pidsKey]pidsFile{}
	}
	p.gen++
	for i, parent := range parents {
		var err error
		if p.names, p.buf, err = readDirNames(parent, p.names[:0], p.buf); err != nil {
			continue // no sandboxes (or pool) yet
		}
		for _, name := range p.names {
			if ctx.Err() != nil {
				return tasks, sandboxes // a partial reading keeps every cached file
			}
			if n, ok := p.read(pidsKey{parent: i, name: name}, parent, find); ok {
				tasks += n
				sandboxes++
			}
		}
	}
	for k, f := range p.files {
		if f.seen != p.gen {
			delete(p.files, k) // its directory is gone: removed, or a claimed member renamed
		}
	}
	return tasks, sandboxes
}

// Cached returns how many sandboxes' pids files are cached (tests).
func (p *Pids) Cached() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.files)
}

// read returns the tasks of the sandbox k (under parent) and whether it
// counts.
func (p *Pids) read(k pidsKey, parent string, find func(string) (string, int64, bool)) (int64, bool) {
	if f, ok := p.files[k]; ok {
		if n, err := jail.ReadPids(f.path); err == nil {
			f.seen = p.gen
			p.files[k] = f
			return n, true
		}
		delete(p.files, k)
	}
	path, n, ok := find(filepath.Join(parent, k.name))
	if !ok {
		return 0, false
	}
	p.files[k] = pidsFile{path: path, seen: p.gen}
	return n, true
}

// readDirNames appends the names in dir to names with plain system calls
// (open, getdents until the end, close: no poller round and no sort, as
// os.ReadDir has), buf being getdents' buffer, both returned for reuse.
func readDirNames(dir string, names []string, buf []byte) ([]string, []byte, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return names, buf, fmt.Errorf("read directory: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(fd)
	if len(buf) == 0 {
		buf = make([]byte, 16<<10) // ~400 entries a call
	}
	for {
		n, err := unix.Getdents(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return names, buf, fmt.Errorf("read directory: %w", &os.PathError{Op: "getdents", Path: dir, Err: err})
		case n <= 0:
			return names, buf, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
