package cli

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// writeTree writes the tree under dir to w as a tar with names relative to
// dir: directories, regular files and symlinks (as symlinks, never
// followed), with their modes and modification times. Anything else
// (sockets, FIFOs, devices) is skipped with a note on warn.
func writeTree(w io.Writer, dir string, warn io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		return addTreeEntry(tw, p, filepath.ToSlash(rel), d, warn)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func addTreeEntry(tw *tar.Writer, p, name string, d fs.DirEntry, warn io.Writer) error {
	fi, err := d.Info() // WalkDir's entries are not followed: a symlink is a symlink
	if err != nil {
		return err
	}
	var link string
	switch mode := fi.Mode(); {
	case mode&fs.ModeSymlink != 0:
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	case !mode.IsDir() && !mode.IsRegular():
		fmt.Fprintf(warn, "skipping %s: not a regular file, directory or symlink\n", p)
		return nil
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	// Local user and group names mean nothing in the sandbox.
	hdr.Name, hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = name, "", "", 0, 0
	if fi.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	// Exactly the size announced: a file that changed meanwhile is an
	// error, not a corrupt archive.
	if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	return nil
}

// treeStats counts what extractTree wrote.
type treeStats struct {
	files int
	bytes int64
}

// extractTree extracts the tar on r under dest, creating dest. It goes
// through an os.Root, so no entry (nor a symlink an earlier entry made) can
// write outside dest; names that are absolute or contain ".." are refused
// outright. Modes (permission and sticky bits) and modification times are
// kept; an existing file or symlink is replaced, not written through.
func extractTree(r io.Reader, dest string, warn io.Writer) (treeStats, error) {
	var st treeStats
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return st, err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return st, err
	}
	defer root.Close()
	type dirMeta struct {
		name  string
		mode  fs.FileMode
		mtime time.Time
	}
	var dirs []dirMeta
	x := &extraction{root: root, made: map[string]bool{}}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("read archive: %w", err)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return st, fmt.Errorf("archive entry %q %w", hdr.Name, err)
		}
		mode := hdr.FileInfo().Mode() & (fs.ModePerm | fs.ModeSticky)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := x.mkdirAll(name); err != nil {
				return st, err
			}
			// Applied last: a read-only mode would stop what goes
			// inside, and writing inside changes the mtime.
			dirs = append(dirs, dirMeta{name, mode, hdr.ModTime})
		case tar.TypeReg:
			n, err := x.file(name, tr, mode, hdr.ModTime)
			if err != nil {
				return st, err
			}
			st.files++
			st.bytes += n
		case tar.TypeSymlink:
			if err := x.replaceable(name); err != nil {
				return st, err
			}
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return st, err
			}
		case tar.TypeLink:
			old, err := entryName(hdr.Linkname)
			if err != nil {
				return st, fmt.Errorf("archive entry %q links to %q, which %w", hdr.Name, hdr.Linkname, err)
			}
			if err := x.replaceable(name); err != nil {
				return st, err
			}
			if err := root.Link(old, name); err != nil {
				return st, err
			}
			st.files++
		default:
			fmt.Fprintf(warn, "skipping %s: unsupported archive entry type %q\n", hdr.Name, hdr.Typeflag)
		}
	}
	// Deepest first, so setting a parent's mtime comes after every change inside it.
	slices.Reverse(dirs)
	for _, d := range dirs {
		if err := root.Chmod(d.name, d.mode); err != nil {
			return st, err
		}
		if err := root.Chtimes(d.name, d.mtime, d.mtime); err != nil {
			return st, err
		}
	}
	return st, nil
}

// entryName checks a tar entry name and returns it clean and relative;
// "." is the destination itself.
func entryName(name string) (string, error) {
	switch {
	case name == "" || strings.IndexByte(name, 0) >= 0:
		return "", errors.New("is empty or contains a NUL byte")
	case path.IsAbs(name):
		return "", errors.New("is absolute")
	case slices.Contains(strings.Split(name, "/"), ".."):
		return "", errors.New(`contains ".."`)
	}
	return path.Clean(name), nil
}

// extraction is the state of one extractTree.
type extraction struct {
	root *os.Root
	made map[string]bool // directories known to exist: most entries share one
}

func (x *extraction) mkdirAll(name string) error {
	if x.made[name] {
		return nil
	}
	// Permissive while filling; the archive's mode is applied at the end.
	if err := x.root.MkdirAll(name, 0o700); err != nil {
		return err
	}
	x.made[name] = true
	return nil
}

// replaceable makes way for a new file, link or symlink at name: its
// directory is created, and a non-directory already there is removed.
func (x *extraction) replaceable(name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := x.mkdirAll(dir); err != nil {
			return err
		}
	}
	fi, err := x.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s: a directory is in the way", name)
	}
	delete(x.made, name)
	return x.root.Remove(name)
}

// file writes one regular file with its mode and mtime.
func (x *extraction) file(name string, r io.Reader, mode fs.FileMode, mtime time.Time) (int64, error) {
	if err := x.replaceable(name); err != nil {
		return 0, err
	}
	// O_EXCL: name was just cleared, so anything there now was put there
	// meanwhile, and is not written through.
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Chmod(mode) // on the open file: exact, whatever the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("write %s: %w", name, err)
	}
	return n, x.root.Chtimes(name, mtime, mtime)
}
