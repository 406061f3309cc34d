package kube

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	corev1 "k8s.io/api/core/v1"
)

// archiveOneFileSystemProtocol is the sidecar protocol version from which
// GET /files/archive takes one_file_system (server/internal/sidecar's
// ProtoArchiveOneFileSystem; docs/architecture.md, "Sidecar protocol
// versions"). An older sidecar, in a pod of an image older than the
// control plane, copies the volumes mounted below the workspace too: the
// driver then leaves their entries out of the copy itself (withoutVolumes).
const archiveOneFileSystemProtocol = 1

// volumeDirs are the directories of pod's mounts below the workspace (its
// boxkite volumes), relative to it ("data", "a/b"): how an archive of the
// workspace names them.
func volumeDirs(p *corev1.Pod) []string {
	var dirs []string
	for _, c := range p.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if rel, ok := strings.CutPrefix(path.Clean(m.MountPath), workspace+"/"); ok && rel != "" {
				dirs = append(dirs, rel)
			}
		}
	}
	return dirs
}

// archiveBody is the workspace's tar of resp as the snapshot keeps it:
// as the sidecar sent it when it left the volumes out (it speaks
// archiveOneFileSystemProtocol), else without the entries of dirs. Close
// it when done.
func archiveBody(resp *http.Response, dirs []string) io.ReadCloser {
	if len(dirs) == 0 || api.SidecarProtocolOf(resp.Header) >= archiveOneFileSystemProtocol {
		return io.NopCloser(resp.Body)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(withoutVolumes(pw, resp.Body, dirs)) }()
	return pr // closing it ends the copy's writes
}

// withoutVolumes copies the tar read from r to w, leaving out each entry
// that is one of dirs or lies below one, as the sidecar's one_file_system
// leaves out a mount point and everything under it.
func withoutVolumes(w io.Writer, r io.Reader, dirs []string) error {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the workspace's tar: %w", err)
		}
		if inVolume(hdr.Name, dirs) {
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("write the workspace's tar: %w", err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("copy the workspace's tar: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write the workspace's tar: %w", err)
	}
	return nil
}

// inVolume reports whether the entry name (relative to the workspace, a
// directory's with a trailing slash) is one of dirs or below one.
func inVolume(name string, dirs []string) bool {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	for _, d := range dirs {
		if name == d || strings.HasPrefix(name, d+"/") {
			return true
		}
	}
	return false
}
