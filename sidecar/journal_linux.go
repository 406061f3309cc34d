package sidecar

import (
	"encoding/binary"
	"errors"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// journalMask selects the events that change what the sync stores:
// IN_ATTRIB catches a modification time set without a write (touch -d).
// Directories are named to inotify as /proc/self/fd/N of a descriptor
// opened beneath the workspace, so the magic link is followed; IN_ONLYDIR
// checks what it leads to.
const journalMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// jwatch is one inotify instance of the journal.
type jwatch struct {
	f    *os.File
	fd   int
	root int            // the workspace, held for directories created later
	user fsUser         // watches are added as the sandbox user
	dirs map[int]string // watch descriptor → directory below the workspace ("" for it)
	buf  []byte
}

func (w *jwatch) watched() int { return len(w.dirs) }

// journalStateOf is the state a failure to start leaves the journal in.
func journalStateOf(error) string { return journalUnavailable }

// newInotify creates a non-blocking inotify instance.
func newInotify() (int, error) { return unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK) }

// startLocked creates the inotify instance and its reader. Nothing is
// watched yet: the full walk that follows adds the directories.
func (j *journal) startLocked(v *fsView, root *cursor) error {
	fd, err := j.newInotify()
	if err != nil {
		return err // EMFILE: the uid's max_user_instances are taken
	}
	rfd, err := unix.FcntlInt(uintptr(root.dir()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return err
	}
	w := &jwatch{f: os.NewFile(uintptr(fd), "journal"), fd: fd, root: rfd, user: v.user, dirs: map[int]string{}, buf: make([]byte, 8<<10)}
	j.w, j.state = w, journalWatching
	j.forget() // tokens of an earlier instance are answered in full
	go j.read(w)
	return nil
}

// stopLocked stops watching; state says why ("" to start over). The
// reader closes the instance: closing it here could wait on the reader,
// which may be waiting on mu.
func (j *journal) stopLocked(state string) {
	if j.w != nil {
		_ = j.w.f.SetReadDeadline(time.Now()) // wakes the reader
		j.w = nil
	}
	j.state = state
	j.forget()
}

// read waits on the netpoller until the instance is readable and records
// its events, until the journal stops using it.
func (j *journal) read(w *jwatch) {
	defer func() {
		w.f.Close()
		unix.Close(w.root)
	}()
	rc, err := w.f.SyscallConn()
	if err != nil {
		j.mu.Lock()
		if j.w == w {
			j.stopLocked(journalUnavailable)
		}
		j.mu.Unlock()
		return
	}
	for {
		current := true
		err := rc.Read(func(uintptr) bool {
			j.mu.Lock()
			defer j.mu.Unlock()
			if j.w != w {
				current = false
				return true
			}
			j.drainLocked()
			return j.w != w // false: drained, wait for more
		})
		if !current || err != nil {
			j.mu.Lock()
			if j.w == w {
				j.stopLocked(journalUnavailable)
			}
			j.mu.Unlock()
			return
		}
		j.mu.Lock()
		current = j.w == w
		j.mu.Unlock()
		if !current {
			return
		}
	}
}

// drainLocked reads and records every event queued, until none is left.
func (j *journal) drainLocked() {
	w := j.w
	_ = w.user.do(func() error {
		for j.w == w {
			n, err := unix.Read(w.fd, w.buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n <= 0 {
				return nil // EAGAIN: drained
			}
			j.parse(w, w.buf[:n])
		}
		return nil
	})
}

// parse records the events in buf. Call it as the sandbox user.
func (j *journal) parse(w *jwatch, buf []byte) {
	for len(buf) >= unix.SizeofInotifyEvent && j.w == w {
		wd := int(int32(binary.NativeEndian.Uint32(buf[0:])))
		mask := binary.NativeEndian.Uint32(buf[4:])
		n := int(binary.NativeEndian.Uint32(buf[12:]))
		end := min(unix.SizeofInotifyEvent+n, len(buf))
		name := strings.TrimRight(string(buf[unix.SizeofInotifyEvent:end]), "\x00")
		buf = buf[end:]
		if mask&unix.IN_Q_OVERFLOW != 0 {
			// Events were lost, and with them directories to watch.
			j.forget()
			j.rescan = true
			continue
		}
		dir, ok := w.dirs[wd]
		if !ok {
			continue
		}
		switch {
		case mask&unix.IN_IGNORED != 0:
			delete(w.dirs, wd)
			continue
		case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
			if dir == "" {
				j.forget() // the workspace itself went: only a walk can tell
				j.rescan = true
			}
			continue // a subdirectory's removal is reported by its parent
		case name == "" || strings.Contains(name, "/"):
			continue
		}
		isDir := mask&unix.IN_ISDIR != 0
		if isDir && slices.Contains(j.skip, name) {
			continue // ignored: never watched, never synced
		}
		rel := path.Join(dir, name)
		j.note(rel)
		if !isDir {
			continue
		}
		if mask&unix.IN_MOVED_FROM != 0 {
			j.unwatch(w, rel) // its watches would report under the old name
		}
		if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			j.watchNew(w, rel)
		}
	}
}

// unwatch drops the watches of the directory rel and those below it.
func (j *journal) unwatch(w *jwatch, rel string) {
	for wd, d := range w.dirs {
		if api.InScope(d, rel) {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.dirs, wd)
		}
	}
}

// watchNew watches a directory created or moved in, found beneath the
// workspace without following a link, and those below it. What they
// already hold is the answer's: the change of rel covers its subtree.
func (j *journal) watchNew(w *jwatch, rel string) {
	fd, err := openBeneath(w.root, splitPath(rel), oPath|unix.O_DIRECTORY)
	if err != nil {
		return // gone again, or a link now
	}
	j.addTree(w, fd, rel)
}

// addTree watches the directory held by fd (rel below the workspace) and
// every directory below it but the ignored ones; it closes fd.
func (j *journal) addTree(w *jwatch, fd int, rel string) {
	defer unix.Close(fd)
	if j.w != w || !j.addLocked(rel, fd) {
		return
	}
	des, err := readDir(fd)
	if err != nil {
		return
	}
	for _, de := range des {
		if de.kind() != unix.S_IFDIR || slices.Contains(j.skip, de.name) {
			continue
		}
		sub, err := unix.Openat(fd, de.name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		j.addTree(w, sub, path.Join(rel, de.name))
		if j.w != w {
			return
		}
	}
}

// addLocked watches the directory rel held by the descriptor dir; past
// the budget, or when the kernel has no watch left, the journal stops.
// Call it as the sandbox user: inotify checks read access. It reports
// whether the journal still watches.
func (j *journal) addLocked(rel string, dir int) bool {
	w := j.w
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(dir), journalMask)
	switch {
	case errors.Is(err, unix.ENOSPC):
		j.stopLocked(journalUnavailable) // max_user_watches
		return false
	case err != nil:
		return true // gone, or unreadable: the walk cannot read it either
	}
	if _, ok := w.dirs[wd]; !ok && len(w.dirs) >= j.maxDirs {
		j.stopLocked(journalOverBudget)
		return false
	}
	w.dirs[wd] = rel
	return true
}
