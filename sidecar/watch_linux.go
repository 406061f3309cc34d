package sidecar

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// watchMask selects the events /watch reports. IN_CLOSE_WRITE counts as a
// modification so a touch of an existing file is seen.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// inotify is one /watch's inotify instance.
type inotify struct {
	f         *os.File
	fd        int            // f's; f.Fd() would put f in blocking mode and break its deadlines
	root      string         // real host path of the watched directory
	dirs      map[int]string // watch descriptor → directory relative to root ("" for root)
	maxDirs   int
	recursive bool
	changes   []api.WatchChange
	seen      map[api.WatchChange]bool
}

// watchDir waits up to timeout for changes under dir and returns the first
// batch, deduplicated; none means it timed out. ctx ends it early.
func watchDir(ctx context.Context, dir string, recursive bool, timeout time.Duration, maxDirs int) ([]api.WatchChange, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify init: %w", err)
	}
	// Non-blocking, so the runtime poller serves reads and deadlines work.
	in := &inotify{
		f: os.NewFile(uintptr(fd), "inotify"), fd: fd, root: dir, dirs: map[int]string{}, maxDirs: maxDirs,
		recursive: recursive, changes: []api.WatchChange{}, seen: map[api.WatchChange]bool{},
	}
	defer in.f.Close()
	if err := in.add(""); err != nil {
		return nil, err
	}
	if recursive {
		if err := in.addTree(""); err != nil {
			return nil, err
		}
	}
	if err := in.f.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("inotify deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = in.f.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 64<<10)
	settling := false
	for {
		n, err := in.f.Read(buf)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return in.changes, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read inotify: %w", err)
		}
		in.parse(buf[:n])
		if len(in.changes) > 0 && !settling {
			settling = true
			_ = in.f.SetReadDeadline(time.Now().Add(watchSettle))
		}
	}
}

// add watches the directory rel (relative to the root).
func (in *inotify) add(rel string) error {
	if len(in.dirs) >= in.maxDirs {
		return api.Errorf(http.StatusUnprocessableEntity, api.CodeLimitExceeded, "watch covers more than %d directories", in.maxDirs).
			WithHint("watch a smaller tree, or without recursive")
	}
	wd, err := unix.InotifyAddWatch(in.fd, filepath.Join(in.root, rel), watchMask)
	if err != nil {
		if rel != "" && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) {
			return nil // gone again before we got to it
		}
		return fmt.Errorf("inotify add watch: %w", err)
	}
	in.dirs[wd] = rel
	return nil
}

// addTree watches every directory below rel. Symlinks are not followed, so
// the watch stays inside the tree it was asked for.
func (in *inotify) addTree(rel string) error {
	base := filepath.Join(in.root, rel)
	return filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == base {
			return nil
		}
		return in.add(filepath.ToSlash(strings.TrimPrefix(p, in.root+"/")))
	})
}

// parse records the events in buf. A directory created or moved in under a
// recursive watch is watched too, with everything already inside it
// reported as created, since its own events were missed.
func (in *inotify) parse(buf []byte) {
	for len(buf) >= unix.SizeofInotifyEvent {
		wd := int(int32(binary.NativeEndian.Uint32(buf[0:])))
		mask := binary.NativeEndian.Uint32(buf[4:])
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
			if dir == "" {
				in.record(".", api.WatchDeleted)
			}
			continue // a subdirectory's removal is reported by its parent
		}
		if isTemp(name) {
			continue // the rename that ends the write is reported as moved_to
		}
		in.record(rel, eventName(mask))
		if in.recursive && mask&unix.IN_ISDIR != 0 && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			_ = in.add(rel) // at the cap, the new directory goes unwatched
			in.catchUp(rel)
		}
	}
}

// catchUp reports what a new directory already holds and watches its
// subdirectories.
func (in *inotify) catchUp(rel string) {
	base := filepath.Join(in.root, rel)
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == base {
			return nil
		}
		sub := filepath.ToSlash(strings.TrimPrefix(p, in.root+"/"))
		if !d.IsDir() && isTemp(d.Name()) {
			return nil
		}
		in.record(sub, api.WatchCreated)
		if d.IsDir() {
			_ = in.add(sub)
		}
		return nil
	})
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
