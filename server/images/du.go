//go:build linux

package images

import (
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// duSize is how many bytes the regular files under dir hold.
func duSize(dir string) int64 { return duWalk(dir, nil) }

// duWalk is duSize, calling visit (when not nil; tests) with each
// directory's path, relative to the directory it is opened beneath,
// before it is opened.
//
// A build's jail writes its upper dir as root while it is measured, so
// the walk never follows a symlink: each directory is opened beneath a
// directory's descriptor with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)
// and its entries are stat'ed relative to its own (AT_SYMLINK_NOFOLLOW).
// A directory swapped for a symlink mid-walk is skipped; by path
// (filepath.WalkDir), the walk read whatever it led to, the host's / for a
// link to it. Past duRebase bytes of path, a directory's descriptor is
// kept and its subdirectories opened beneath it, so a tree nested deeper
// than PATH_MAX is counted too (by path it was not reached, and its files
// passed the limit unseen).
func duWalk(dir string, visit func(rel string)) int64 {
	rootFD, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	var n int64
	pending := []duDir{{base: &duBase{fd: rootFD, refs: 1}, rel: "."}}
	for len(pending) > 0 {
		d := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if visit != nil {
			visit(d.rel)
		}
		fd, subdirs, size := duList(d.base.fd, d.rel)
		n += size
		if len(subdirs) > 0 && len(d.rel) > duRebase {
			base := &duBase{fd: fd, refs: len(subdirs)}
			for _, name := range subdirs {
				pending = append(pending, duDir{base: base, rel: name})
			}
		} else {
			d.base.refs += len(subdirs)
			for _, name := range subdirs {
				pending = append(pending, duDir{base: d.base, rel: path.Join(d.rel, name)})
			}
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		d.base.release()
	}
	return n
}

// duRebase is how long a directory's path below its base may grow before
// its subdirectories are opened beneath it instead: with a name at most
// 255 bytes, a path stays below PATH_MAX (4096).
const duRebase = 2048

// duDir is a directory to measure: rel beneath base.
type duDir struct {
	base *duBase
	rel  string
}

// duBase is a directory descriptor that directories still to measure are
// opened beneath; refs counts them, and the last closes it.
type duBase struct{ fd, refs int }

func (b *duBase) release() {
	if b.refs--; b.refs == 0 {
		unix.Close(b.fd)
	}
}

// duList opens the directory rel beneath base without following a
// symlink and returns its descriptor (-1 when it could not be opened),
// its subdirectories' names and the bytes its regular files hold.
func duList(base int, rel string) (fd int, subdirs []string, n int64) {
	fd, err := unix.Openat2(base, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, nil, 0
	}
	listFD, err := unix.Dup(fd) // the listing's, closed with it
	if err != nil {
		unix.Close(fd)
		return -1, nil, 0
	}
	d := os.NewFile(uintptr(listFD), rel)
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
				subdirs = append(subdirs, name)
			}
		}
		if err != nil {
			return fd, subdirs, n
		}
	}
}
