//go:build linux

package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// extractArchive flattens the image in archive (docker save or OCI layout
// tar) into the image's rootfs and removes the archive. Its error says
// why, as an import's failure (importFailure).
func (m *Manager) extractArchive(id, archive string) error {
	defer os.Remove(archive)
	img, err := tarball.ImageFromPath(archive, nil)
	if err == nil {
		_, err = img.Manifest() // tarball is lazy: a tar without manifest.json fails here
	}
	if err != nil {
		dir := m.path(id, "layout")
		defer os.RemoveAll(dir)
		var lerr error
		if img, lerr = ociImage(archive, dir); lerr != nil {
			return importFailure(fmt.Errorf("read archive: neither docker save (%v) nor OCI layout (%w)", err, lerr), m.buildDiskLimit)
		}
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	files := &boundedReader{r: rc, left: m.buildDiskLimit}
	err = unpack(files, m.path(id, "rootfs"), true)
	if files.over {
		err = errImportSize{limit: m.buildDiskLimit}
	}
	return importFailure(err, m.buildDiskLimit)
}

// boundedReader reads r until more than left bytes came, then fails (an
// image's flattened files, whose archive may be compressed many times
// over); over says it did.
type boundedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.left -= int64(n); b.left < 0 {
		b.over = true
		return 0, errImportSize{}
	}
	return n, err
}

// errImportSize fails an import whose files come to more than limit
// bytes.
type errImportSize struct{ limit int64 }

func (e errImportSize) Error() string {
	return "the image's files come to more than " + sizeText(e.limit)
}

// ociImage unpacks an OCI layout tar into dir and returns its image for
// this machine's architecture (or its only image).
func ociImage(archive, dir string) (v1.Image, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := unpack(f, dir, false); err != nil {
		return nil, err
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	return pickImage(idx, 0)
}

func pickImage(idx v1.ImageIndex, depth int) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.Architecture != "" && d.Platform.Architecture != runtime.GOARCH {
			continue
		}
		if d.MediaType.IsIndex() && depth < 2 {
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			return pickImage(child, depth+1)
		}
		if d.MediaType.IsImage() {
			return idx.Image(d.Digest)
		}
	}
	return nil, errors.New("no image for " + runtime.GOARCH + " in the index")
}

// unpack writes the tar stream r under dir without ever leaving it (os.Root
// refuses escapes through "..", absolute names and symlinks; modes are set
// through descriptors, never by a name looked up again). Device nodes
// and FIFOs are skipped, setuid, setgid and sticky bits stripped. Ownership
// is not kept: everything belongs to the server's user, and the jail maps
// it read-only. rootfs selects the error for special files: an image may
// carry them harmlessly, a layout never.
func unpack(r io.Reader, dir string, rootfs bool) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") {
			continue
		}
		if err := unpackEntry(root, tr, h, name, rootfs); err != nil {
			return fmt.Errorf("unpack %s: %w", name, err)
		}
	}
}

func unpackEntry(root *os.Root, tr *tar.Reader, h *tar.Header, name string, rootfs bool) error {
	mode := fs.FileMode(h.Mode) & fs.ModePerm
	if d := path.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, 0o755); err != nil {
			return err
		}
		// Through a descriptor: Root.Chmod follows a symlink swapped in
		// for the last component.
		d, err := root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		err = d.Chmod(mode)
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		return err
	case tar.TypeReg:
		_ = root.Remove(name) // a later layer's file over an earlier one's link
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if err == nil {
			err = f.Chmod(mode)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case tar.TypeSymlink:
		if !rootfs {
			return errors.New("symlink in an image layout")
		}
		_ = root.Remove(name)
		return root.Symlink(h.Linkname, name)
	case tar.TypeLink:
		target := path.Clean(strings.TrimPrefix(h.Linkname, "/"))
		if strings.HasPrefix(target, "../") || target == ".." {
			return errors.New("hard link out of the image")
		}
		_ = root.Remove(name)
		return root.Link(target, name)
	default: // devices, FIFOs: nothing a sandbox may create or needs
		if !rootfs {
			return fmt.Errorf("entry of type %q in an image layout", h.Typeflag)
		}
		return nil
	}
}
