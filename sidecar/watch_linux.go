package sidecar

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// watchMask selects the events /watch reports. IN_CLOSE_WRITE counts as a
// modification so a touch of an existing file is seen. Directories are
// named to inotify as /proc/self/fd/N of a descriptor the walk holds, so
// the magic link must be followed (no IN_DONT_FOLLOW); IN_ONLYDIR checks
// what it leads to.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR

// watchGonePoll is how often a quiet watch looks whether its directory
// was removed (inotify.next says why it must look).
const watchGonePoll = 250 * time.Millisecond

// inotify is one /watch's inotify instance.
type inotify struct {
	f         *os.File
	fd        int            // f's; f.Fd() would put f in blocking mode and break its deadlines
	v         *fsView        // watches are added as the sandbox user
	root      *cursor        // the watched directory
	dirs      map[int]string // watch descriptor → directory relative to root ("" for root)
	maxDirs   int
	recursive bool
	changes   []api.WatchChange
	seen      map[api.WatchChange]bool
	// gone: the watched directory was reported deleted.
	gone bool
	// written is the cookie of the last rename of one of writeFile's
	// temp files (0: none): the rename that ends a write.
	written uint32
}

// openWatch arms inotify on the directory at root (and, recursive, every
// directory below it); from its return on, changes are seen.
func openWatch(v *fsView, root *cursor, recursive bool, maxDirs int) (*inotify, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify init: %w", err)
	}
	// Non-blocking, so the runtime poller serves reads and deadlines work.
	in := &inotify{
		f: os.NewFile(uintptr(fd), "inotify"), fd: fd, v: v, root: root, dirs: map[int]string{}, maxDirs: maxDirs,
		recursive: recursive,
	}
	err = v.user.do(func() error {
		if err := in.add("", root.dir()); err != nil {
			return err
		}
		if recursive {
			return in.addTree(root.sub(), "")
		}
		return nil
	})
	if err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

func (in *inotify) close() { in.f.Close() }

// next waits until deadline for changes and returns the first batch,
// deduplicated; none means the deadline passed. ctx ends it early.
//
// While quiet it looks every watchGonePoll whether the watched directory
// is gone: the watch holds it open, and the kernel sends IN_DELETE_SELF
// only once the last descriptor of a removed directory is closed, so an
// rmdir (or an rm -r, or a move to another filesystem) of the directory
// itself shows only in its link count.
func (in *inotify) next(ctx context.Context, deadline time.Time) ([]api.WatchChange, error) {
	in.changes, in.seen = []api.WatchChange{}, map[api.WatchChange]bool{}
	stop := context.AfterFunc(ctx, func() { _ = in.f.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 64<<10)
	settling := false
	wake := func(at time.Time) error {
		if poll := time.Now().Add(watchGonePoll); !settling && !in.gone && poll.Before(at) {
			at = poll
		}
		if err := in.f.SetReadDeadline(at); err != nil {
			return fmt.Errorf("inotify deadline: %w", err)
		}
		return ctx.Err() // cancelled meanwhile: AfterFunc's deadline may be overwritten
	}
	if err := wake(deadline); err != nil {
		return nil, err
	}
	for {
		n, err := in.f.Read(buf)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			in.checkGone()
			if len(in.changes) > 0 || !time.Now().Before(deadline) {
				return in.changes, nil
			}
			if err := wake(deadline); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read inotify: %w", err)
		}
		_ = in.v.user.do(func() error { in.parse(buf[:n]); return nil })
		if len(in.changes) > 0 && !settling {
			settling = true
			if err := wake(time.Now().Add(watchSettle)); err != nil {
				return nil, err
			}
		}
	}
}

// checkGone records the watched directory as deleted once it has no links
// left (see next); a later batch does not report it again.
func (in *inotify) checkGone() {
	var st unix.Stat_t
	if in.gone || unix.Fstat(in.root.dir(), &st) != nil || st.Nlink > 0 {
		return
	}
	in.gone = true
	in.record(".", api.WatchDeleted)
}

// add watches the directory rel (relative to the root), held by the
// descriptor dir. Call it as the sandbox user: inotify checks read access.
func (in *inotify) add(rel string, dir int) error {
	if len(in.dirs) >= in.maxDirs {
		return api.Errorf(http.StatusUnprocessableEntity, api.CodeLimitExceeded, "watch covers more than %d directories", in.maxDirs).
			WithHint("watch a smaller tree, or without recursive")
	}
	wd, err := unix.InotifyAddWatch(in.fd, "/proc/self/fd/"+strconv.Itoa(dir), watchMask)
	if err != nil {
		if rel != "" && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) {
			return nil // gone again before we got to it
		}
		return fmt.Errorf("inotify add watch: %w", err)
	}
	in.dirs[wd] = rel
	return nil
}

// addTree watches every directory below the one at cur (rel below the
// root), which it closes. Symlinks are not followed, so the watch stays
// inside the tree it was asked for.
func (in *inotify) addTree(cur *cursor, rel string) error {
	defer cur.close()
	des, err := readDir(cur.dir())
	if err != nil {
		return nil // unreadable: its subdirectories go unwatched
	}
	for _, de := range des {
		if de.kind() != unix.S_IFDIR {
			continue
		}
		fd, err := unix.Openat(cur.dir(), de.name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		sub := cur.sub()
		sub.push(fd, de.name)
		r := path.Join(rel, de.name)
		if err := in.add(r, fd); err != nil {
			sub.close()
			return err
		}
		if err := in.addTree(sub, r); err != nil {
			return err
		}
	}
	return nil
}

// parse records the events in buf. A directory created or moved in under a
// recursive watch is watched too, with everything already inside it
// reported as created, since its own events were missed. Call it as the
// sandbox user.
func (in *inotify) parse(buf []byte) {
	for len(buf) >= unix.SizeofInotifyEvent {
		wd := int(int32(binary.NativeEndian.Uint32(buf[0:])))
		mask := binary.NativeEndian.Uint32(buf[4:])
		cookie := binary.NativeEndian.Uint32(buf[8:])
		n := int(binary.NativeEndian.Uint32(buf[12:]))
		end := min(unix.SizeofInotifyEvent+n, len(buf))
		name := strings.TrimRight(string(buf[unix.SizeofInotifyEvent:end]), "\x00")
		buf = buf[end:]
		dir, ok := in.dirs[wd]
		if !ok {
			continue
		}
		if mask&unix.IN_IGNORED != 0 {
			delete(in.dirs, wd)
			continue
		}
		rel := path.Join(dir, name)
		if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
			if dir == "" && !in.gone {
				in.gone = mask&unix.IN_DELETE_SELF != 0
				in.record(".", api.WatchDeleted)
			}
			continue // a subdirectory's removal is reported by its parent
		}
		if isTemp(name) {
			if mask&unix.IN_MOVED_FROM != 0 {
				in.written = cookie
			}
			continue // the rename that ends the write is reported as moved_to
		}
		in.record(rel, eventName(mask))
		if mask&unix.IN_MOVED_TO != 0 && cookie != 0 && cookie == in.written {
			// A write of the sidecar's (its temp file renamed over the
			// target): modified too, as a write in place shows, so
			// E2B's watchDir sees files.write as a write event.
			in.written = 0
			in.record(rel, api.WatchModified)
		}
		if in.recursive && mask&unix.IN_ISDIR != 0 && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			in.catchUp(rel)
		}
	}
}

// catchUp watches a new directory, found beneath the root without
// following symlinks, reports what it already holds and watches its
// subdirectories. At the cap, new directories go unwatched.
func (in *inotify) catchUp(rel string) {
	fd, err := openBeneath(in.root.dir(), splitPath(rel), oPath|unix.O_DIRECTORY)
	if err != nil {
		return
	}
	cur := in.root.sub()
	cur.push(fd, rel) // one descriptor for the whole way down: its name is rel
	_ = in.add(rel, fd)
	in.reportTree(cur, rel)
}

// reportTree records everything below the new directory at cur as created
// and watches its subdirectories; it closes cur.
func (in *inotify) reportTree(cur *cursor, rel string) {
	defer cur.close()
	des, err := readDir(cur.dir())
	if err != nil {
		return
	}
	for _, de := range des {
		sub := path.Join(rel, de.name)
		if de.kind() != unix.S_IFDIR {
			if !isTemp(de.name) {
				in.record(sub, api.WatchCreated)
			}
			continue
		}
		in.record(sub, api.WatchCreated)
		fd, err := unix.Openat(cur.dir(), de.name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		next := cur.sub()
		next.push(fd, de.name)
		_ = in.add(sub, fd)
		in.reportTree(next, sub)
	}
}

func (in *inotify) record(rel, event string) {
	c := api.WatchChange{Path: rel, Event: event}
	if event == "" || in.seen[c] {
		return
	}
	in.seen[c] = true
	in.changes = append(in.changes, c)
}

func eventName(mask uint32) string {
	switch {
	case mask&unix.IN_CREATE != 0:
		return api.WatchCreated
	case mask&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE) != 0:
		return api.WatchModified
	case mask&unix.IN_DELETE != 0:
		return api.WatchDeleted
	case mask&unix.IN_MOVED_FROM != 0:
		return api.WatchMovedFrom
	case mask&unix.IN_MOVED_TO != 0:
		return api.WatchMovedTo
	}
	return ""
}
