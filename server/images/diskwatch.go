package images

import (
	"context"
	"fmt"
	"os"
	"path"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultBuildDiskLimit bounds what a build writes into its image
// (WithBuildDiskLimit): install scripts run as the build's root, and the
// image's layers are on the host's disk.
const DefaultBuildDiskLimit = 10 << 30

// WithBuildDiskLimit stops a build whose layers grow past n bytes.
func WithBuildDiskLimit(n int64) Option { return func(m *Manager) { m.buildDiskLimit = n } }

// diskCheckEvery is how often a running build's layers are measured; a
// build writing fast passes its limit by what it writes in that time.
const diskCheckEvery = 2 * time.Second

// errBuildDisk fails a build whose layers passed the limit.
type errBuildDisk struct{ limit int64 }

func (e errBuildDisk) Error() string {
	return fmt.Sprintf("the build wrote more than %s into the image and was stopped", sizeText(e.limit))
}

func sizeText(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// watchDisk measures image id's layers every diskCheckEvery until ctx
// ends, and calls stop once they pass the limit. over reports whether
// it did.
func (m *Manager) watchDisk(ctx context.Context, id string, stop context.CancelFunc) (over func() bool) {
	var passed atomic.Bool
	go func() {
		t := time.NewTicker(diskCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if duSize(m.path(id, "upper")) > m.buildDiskLimit {
				passed.Store(true)
				stop()
				return
			}
		}
	}()
	return passed.Load
}

// duSize is how many bytes the regular files under dir hold.
func duSize(dir string) int64 { return duWalk(dir, nil) }

// duWalk is duSize, calling visit (when not nil; tests) with each
// directory's path relative to dir before it is opened. A build's jail
// writes its upper dir as root while it is measured, so the walk never
// follows a symlink: each directory is opened beneath dir's descriptor
// with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) and its entries are
// stat'ed relative to its own (AT_SYMLINK_NOFOLLOW). A directory swapped
// for a symlink mid-walk is skipped; by path (filepath.WalkDir), the walk
// read whatever it led to, the host's / for a link to it. Only a
// directory at a time is open. Directories deeper than PATH_MAX below dir
// are not reached (as by path), nor counted.
func duWalk(dir string, visit func(rel string)) int64 {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(root)
	var n int64
	for pending := []string{"."}; len(pending) > 0; {
		rel := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if visit != nil {
			visit(rel)
		}
		subdirs, size := duDir(root, rel)
		n += size
		pending = append(pending, subdirs...)
	}
	return n
}

// duDir lists the directory rel beneath root without following a
// symlink: the bytes its regular files hold, and its subdirectories.
func duDir(root int, rel string) (subdirs []string, n int64) {
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, 0
	}
	d := os.NewFile(uintptr(fd), rel) // closes fd
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				n += st.Size
			case unix.S_IFDIR:
				subdirs = append(subdirs, path.Join(rel, name))
			}
		}
		if err != nil {
			return subdirs, n
		}
	}
}
