package kube

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// workspaceTar is a tar of a workspace with a volume at data and one at
// sub/vol, as a sidecar without one_file_system sends it.
func workspaceTar(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, name := range []string{"a.txt", "data/", "data/shared.txt", "data2/", "data2/own.txt", "sub/", "sub/vol/", "sub/vol/x", "sub/volume/y", "datafile"} {
		hdr := &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(name))}
		if strings.HasSuffix(name, "/") {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			_, _ = tw.Write([]byte(name))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// tarNames lists the entries of a tar, checking each file's content.
func tarNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if hdr.Typeflag == tar.TypeReg && string(data) != hdr.Name {
			t.Errorf("%s holds %q", hdr.Name, data)
		}
		names = append(names, hdr.Name)
	}
}

// TestDownloadOlderSidecar: the copy of a pod's workspace (snapshot,
// pause) leaves out the volumes mounted below it whatever the pod's
// sidecar: one that speaks one_file_system (protocol 1) is trusted with
// it, and the tar of an older one, which copies the volumes too, is
// filtered by the driver; without the filter a resume wrote the paused
// copy back over what other sandboxes wrote to the shared volume.
func TestDownloadOlderSidecar(t *testing.T) {
	t.Parallel()
	full := workspaceTar(t)
	for _, c := range []struct {
		name, protocol string
		dirs           []string
		want           []string
	}{
		{"older sidecar", "", []string{"data", "sub/vol"}, []string{"a.txt", "data2/", "data2/own.txt", "sub/", "sub/volume/y", "datafile"}},
		{"older sidecar, no volumes", "", nil, tarNames(t, full)},
		// A sidecar of protocol 1 left the volumes out itself: what it
		// sends is kept as sent (here it sent them to show it is not
		// filtered again).
		{"sidecar that speaks it", "1", []string{"data", "sub/vol"}, tarNames(t, full)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("one_file_system") != "true" || r.Header.Get(api.HeaderSidecarToken) != "tok" {
					http.Error(w, "bad request", http.StatusBadRequest)
					return
				}
				if c.protocol != "" {
					w.Header().Set(api.HeaderSidecarProtocol, c.protocol)
				}
				_, _ = w.Write(full)
			}))
			srv.EnableHTTP2 = false
			srv.StartTLS()
			defer srv.Close()
			cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			ep := model.Endpoint{Network: "tcp", Address: srv.Listener.Addr().String(), Token: "tok", CertPEM: cert}
			var out bytes.Buffer
			n, _, err := (&Driver{}).download(t.Context(), ep, c.dirs, &out)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(out.Len()) {
				t.Errorf("size %d, wrote %d", n, out.Len())
			}
			if got := tarNames(t, out.Bytes()); !slices.Equal(got, c.want) {
				t.Errorf("entries %q, want %q", got, c.want)
			}
		})
	}
}

// TestVolumeDirs: the mounts below the workspace, relative to it; the
// workspace, /tmp and the sidecar's secret are not volumes of it.
func TestVolumeDirs(t *testing.T) {
	t.Parallel()
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{
		{MountPath: "/workspace"},
		{MountPath: "/tmp"},
		{MountPath: tlsDir},
		{MountPath: "/workspace/data"},
		{MountPath: "/workspace/a/b/"},
		{MountPath: "/workspacex/c"},
	}}}}}
	if got, want := volumeDirs(p), []string{"data", "a/b"}; !slices.Equal(got, want) {
		t.Errorf("volumeDirs = %q, want %q", got, want)
	}
}

// TestInVolume: an entry is in a volume when it is the volume's
// directory or below it, however the tar spells it.
func TestInVolume(t *testing.T) {
	t.Parallel()
	dirs := []string{"data", "a/b"}
	for name, want := range map[string]bool{
		"data": true, "data/": true, "data/x": true, "./data/x": true, "a/b/c": true, "a/b/": true,
		"data2": false, "a/": false, "a/bc": false, "": false, "x/data": false, "datafile": false,
	} {
		if got := inVolume(name, dirs); got != want {
			t.Errorf("inVolume(%q) = %v, want %v", name, got, want)
		}
	}
}
