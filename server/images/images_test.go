//go:build linux

package images_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/images"
	"github.com/boxkite/boxkite/sidecar/jail"
	"golang.org/x/sys/unix"
)

// testImage has one layer with a marker, a setuid file, a symlink, a
// device node and a name that tries to leave the root.
func testImage(t *testing.T) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		h    tar.Header
		body string
	}{
		{tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		{tar.Header{Name: "etc/boxkite-image-marker", Typeflag: tar.TypeReg, Mode: 0o644}, "marker\n"},
		{tar.Header{Name: "bin/su", Typeflag: tar.TypeReg, Mode: 0o4755}, "#!/bin/sh\n"},
		{tar.Header{Name: "etc/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/boxkite-image-marker"}, ""},
		{tar.Header{Name: "escape", Typeflag: tar.TypeSymlink, Linkname: "/"}, ""},
		{tar.Header{Name: "escape/owned", Typeflag: tar.TypeReg, Mode: 0o644}, "x"},
		{tar.Header{Name: "../outside", Typeflag: tar.TypeReg, Mode: 0o644}, "x"},
		{tar.Header{Name: "dev/sda", Typeflag: tar.TypeBlock, Mode: 0o600, Devmajor: 8}, ""},
	}
	for _, e := range entries {
		e.h.Size = int64(len(e.body))
		if err := tw.WriteHeader(&e.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// ociTar writes img as an OCI layout and tars it up.
func ociTar(t *testing.T, img v1.Image) []byte {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dockerTar(t *testing.T, img v1.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tarball.Write(nil, img, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestImport(t *testing.T) {
	img := testImage(t)
	for name, archive := range map[string][]byte{"oci": ociTar(t, img), "docker": dockerTar(t, img)} {
		t.Run(name, func(t *testing.T) {
			top := t.TempDir()
			m, err := images.New(filepath.Join(top, "images"), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Import(context.Background(), "acct", "lbl", bytes.NewReader(archive))
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != api.ImageQueued || got.Source != api.ImageSourceImport {
				t.Fatalf("Import = %+v, want queued import", got)
			}
			m.Wait()
			done, err := m.Get(t.Context(), "acct", got.ID)
			if err != nil {
				t.Fatal(err)
			}
			if done.Status != api.ImageCompleted {
				t.Fatalf("status %q (%s), want completed", done.Status, done.FailureReason)
			}
			root, err := m.RootFS(t.Context(), "acct", got.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(root, "etc/boxkite-image-marker"))
			if diff := cmp.Diff("marker\n", string(b)); err != nil || diff != "" {
				t.Errorf("marker: %v %s", err, diff)
			}
			if fi, err := os.Stat(filepath.Join(root, "bin/su")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
				t.Errorf("bin/su: %v, mode %v: want setuid stripped", err, fi.Mode())
			}
			if l, err := os.Readlink(filepath.Join(root, "etc/link")); err != nil || l != "/etc/boxkite-image-marker" {
				t.Errorf("etc/link = %q, %v", l, err)
			}
			for _, p := range []string{"/owned", filepath.Join(top, "images", "outside"), filepath.Join(root, "dev/sda")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s exists; the archive escaped or made a device", p)
				}
			}
			if _, err := m.Get(t.Context(), "other", got.ID); err != images.ErrNotFound {
				t.Errorf("Get by another account = %v, want ErrNotFound", err)
			}
			if err := m.Use(context.Background(), got.ID, "sb1"); err != nil {
				t.Fatal(err)
			}
			if err := m.Delete(t.Context(), "acct", got.ID, func(string) bool { return true }); err != images.ErrInUse {
				t.Errorf("Delete in use = %v, want ErrInUse", err)
			}
			if err := m.Delete(t.Context(), "acct", got.ID, func(string) bool { return false }); err != nil {
				t.Errorf("Delete = %v", err)
			}
			if list, err := m.List(t.Context(), "acct"); err != nil || len(list) != 0 {
				t.Errorf("List after delete = %v, %v", list, err)
			}
			// A create that resolved the root before the delete records
			// its use after it: refused, so it never boots a removed root
			// (before, Use recorded it and the boot failed).
			if err := m.Use(context.Background(), got.ID, "sb2"); err != images.ErrNotFound {
				t.Errorf("Use after Delete = %v, want ErrNotFound", err)
			}
		})
	}
}

// layerImage is an image of one layer holding entries.
func layerImage(t *testing.T, entries ...tar.Header) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(tw, zeros{}, h.Size); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// withSymlink is the tar archive with a symlink to / added.
func withSymlink(t *testing.T, archive []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: "/"}); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// smallDisk is a new 512 KiB tmpfs, unmounted when t ends.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=512k"); err != nil {
		t.Fatalf("mount a small tmpfs (the test needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestImportFailures: a failed import says why in a stable failure_code,
// with a hint, as a failed build does; it had only a reason.
func TestImportFailures(t *testing.T) {
	t.Parallel()
	file := func(name string, size int64) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}
	}
	big := layerImage(t, file("big", 2<<20)) // 2 MiB of zeros: a few KiB compressed
	tests := []struct {
		name    string
		archive []byte
		dir     func(t *testing.T) string
		opts    []images.Option
		code    string
		reason  string
	}{
		{name: "not a tar", archive: []byte("not a tar"), code: api.CodeImageImportBadArchive, reason: "neither docker save"},
		{name: "an empty tar", archive: make([]byte, 1024), code: api.CodeImageImportBadArchive, reason: "neither docker save"},
		{
			name:    "a symlink in a layout",
			archive: withSymlink(t, ociTar(t, big)),
			code:    api.CodeImageImportBadArchive, reason: "symlink in an image layout",
		},
		{
			name:    "files past the limit",
			archive: ociTar(t, big), opts: []images.Option{images.WithBuildDiskLimit(1 << 20)},
			code: api.CodeImageImportTooBig, reason: "more than 1 MiB",
		},
		{
			name:    "a full disk",
			archive: dockerTar(t, big), dir: smallDisk,
			code: api.CodeImageImportDiskFull, reason: "no space left on device",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tt.dir != nil {
				dir = tt.dir(t)
			}
			m, err := images.New(filepath.Join(dir, "images"), slog.New(slog.DiscardHandler), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Import(context.Background(), "acct", "", bytes.NewReader(tt.archive))
			if err != nil {
				t.Fatal(err)
			}
			m.Wait()
			done, err := m.Get(t.Context(), "acct", got.ID)
			if err != nil {
				t.Fatal(err)
			}
			if done.Status != api.ImageFailed || done.FailureCode != tt.code || done.FailureHint == "" || !strings.Contains(done.FailureReason, tt.reason) {
				t.Errorf("import = %s, %s: %q, hint %q; want failed, %s: ...%s...", done.Status, done.FailureCode, done.FailureReason, done.FailureHint, tt.code, tt.reason)
			}
			if _, err := os.Stat(filepath.Join(dir, "images", got.ID, "rootfs")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the failed import keeps its rootfs (%v)", err)
			}
		})
	}
}

func TestImageLimit(t *testing.T) {
	m, err := images.New(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for range images.MaxPerAccount {
		if _, err := m.Import(context.Background(), "acct", "", bytes.NewReader(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Import(context.Background(), "acct", "", bytes.NewReader(nil)); err != images.ErrLimit {
		t.Errorf("Import past the limit = %v, want ErrLimit", err)
	}
	if _, err := m.Import(context.Background(), "other", "", bytes.NewReader(nil)); err != nil {
		t.Errorf("another account's import = %v", err)
	}
	m.Wait()
}

// TestImageLimitConcurrent: requests racing for an account's last image
// slots (imports and builds at once) leave it with MaxPerAccount images,
// and racing identical builds make one image. Before the check and the
// insert were one step, each request saw room and the account kept more.
func TestImageLimitConcurrent(t *testing.T) {
	release := make(chan struct{})
	m, err := images.New(t.TempDir(), slog.New(slog.DiscardHandler), images.WithJailer(holdJailer{release}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Wait()
	defer close(release)
	const racers = 3 * images.MaxPerAccount
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]bool{}
	for i := range racers {
		wg.Go(func() {
			var img api.Image
			var err error
			if i%2 == 0 {
				img, err = m.Import(context.Background(), "acct", "", bytes.NewReader(nil))
			} else {
				spec := api.ImageSpec{AptPackages: []string{fmt.Sprintf("pkg%d", i)}}
				img, _, err = m.Build(context.Background(), "acct", "", spec, nil)
			}
			if err != nil && err != images.ErrLimit {
				t.Errorf("racer %d: %v", i, err)
			}
			if err == nil {
				mu.Lock()
				ids[img.ID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	list, err := m.List(t.Context(), "acct")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != images.MaxPerAccount || len(ids) != images.MaxPerAccount {
		t.Errorf("after %d racing requests: %d images, %d admitted; want %d", racers, len(list), len(ids), images.MaxPerAccount)
	}

	ids = map[string]bool{}
	for range racers {
		wg.Go(func() {
			img, _, err := m.Build(context.Background(), "same", "", api.ImageSpec{AptPackages: []string{"jq"}}, nil)
			if err != nil {
				t.Errorf("identical build: %v", err)
				return
			}
			mu.Lock()
			ids[img.ID] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Errorf("%d racing identical builds made %d images, want 1", racers, len(ids))
	}
}

// holdJailer holds every build until release is closed, then fails it:
// builds stay queued or building while a test races requests.
type holdJailer struct{ release chan struct{} }

func (j holdJailer) RunBuild(ctx context.Context, _ string, _ func(int) (jail.Spec, error), _ io.Writer) error {
	select {
	case <-j.release:
	case <-ctx.Done():
	}
	return errors.New("held build released")
}

// TestBuildLogBounded: a build whose steps print without end leaves a
// build log of at most 16 MiB that still ends with the build's outcome.
// Before, the log took every byte until the build timeout, on the host's
// disk.
func TestBuildLogBounded(t *testing.T) {
	m, err := images.New(t.TempDir(), slog.New(slog.DiscardHandler), images.WithJailer(chattyJailer{20 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := m.Build(context.Background(), "acct", "", api.ImageSpec{AptPackages: []string{"jq"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Wait()
	var log bytes.Buffer
	if err := m.Logs(t.Context(), "acct", img.ID, &log, false, func() {}); err != nil {
		t.Fatal(err)
	}
	const limit = 16<<20 + 4096
	if log.Len() > limit {
		t.Errorf("build log is %d bytes, want at most %d", log.Len(), limit)
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "build failed: ") {
		t.Errorf("build log ends %q, want the build's outcome", last)
	}
	if !strings.Contains(log.String(), "[build log truncated") {
		t.Error("build log does not say it was truncated")
	}
}

// chattyJailer's build prints n bytes of output, then fails.
type chattyJailer struct{ n int }

func (j chattyJailer) RunBuild(_ context.Context, _ string, _ func(int) (jail.Spec, error), out io.Writer) error {
	line := []byte(strings.Repeat("y", 1023) + "\n")
	for range j.n / len(line) {
		if _, err := out.Write(line); err != nil {
			return err
		}
	}
	return errors.New("chatty build done")
}

// TestCloseStopsBuilds: Close does not wait for builds (a build may run for
// half an hour): the running ones are killed and the queued ones never
// start, each failed with image_build_failed and its partial files gone,
// and they stay failed in the next Manager. Before, Close waited for every
// build, so a server with one in flight did not stop.
func TestCloseStopsBuilds(t *testing.T) {
	dir := t.TempDir()
	m, err := images.New(dir, slog.New(slog.DiscardHandler), images.WithJailer(holdJailer{}))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range images.MaxRunning + 1 { // one stays queued
		img, _, err := m.Build(context.Background(), "acct", "", api.ImageSpec{AptPackages: []string{fmt.Sprintf("pkg%d", i)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, img.ID)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("Close is still waiting for the builds after a minute")
	}
	m2, err := images.New(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		img, err := m2.Get(t.Context(), "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		if img.Status != api.ImageFailed || img.FailureCode != api.CodeImageBuildFailed || !strings.Contains(img.FailureReason, "shutdown") || img.CompletedAt == nil {
			t.Errorf("image %s after Close = %+v, want failed (image_build_failed) by the shutdown", id, img)
		}
		for _, name := range []string{"upper", "build", "rootfs"} {
			if _, err := os.Stat(filepath.Join(dir, id, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("image %s keeps %s after it failed (%v)", id, name, err)
			}
		}
	}
}

// TestRestartFailsInterrupted: an image a previous process left building
// or extracting (it was killed) is failed by the next New with a failure
// code, a completion time, and its partial layers removed; an import's
// code is image_import_failed (it had none).
func TestRestartFailsInterrupted(t *testing.T) {
	for _, tt := range []struct {
		source, spec, code string
	}{
		{api.ImageSourceBuild, `,"spec":{"base":"boxkite-default","apt_packages":["jq"]}`, api.CodeImageBuildFailed},
		{api.ImageSourceImport, "", api.CodeImageImportFailed},
	} {
		t.Run(tt.source, func(t *testing.T) {
			dir := t.TempDir()
			const id = "img_0123456789abcdef01234567"
			upper := filepath.Join(dir, id, "upper", "usr")
			if err := os.MkdirAll(upper, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(upper, "partial"), make([]byte, 1<<20), 0o600); err != nil {
				t.Fatal(err)
			}
			rec := `{"id":"` + id + `","status":"building","source":"` + tt.source + `"` + tt.spec + `,"created_at":"2026-01-02T03:04:05Z","account_id":"acct"}`
			if err := os.WriteFile(filepath.Join(dir, id, "image.json"), []byte(rec), 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := images.New(dir, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			img, err := m.Get(t.Context(), "acct", id)
			if err != nil {
				t.Fatal(err)
			}
			if img.Status != api.ImageFailed || img.FailureCode != tt.code || img.FailureHint == "" || img.CompletedAt == nil {
				t.Errorf("interrupted image after restart = %+v, want failed with %s, a hint and completion time", img, tt.code)
			}
			if _, err := os.Stat(filepath.Join(dir, id, "upper")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the interrupted image's layers are still on disk (%v)", err)
			}
		})
	}
}

// TestBuildDiskBounded: a build whose install scripts keep writing into the
// image is stopped once its layers pass the limit, and fails saying so.
// Before, nothing bounded them but the host's disk.
func TestBuildDiskBounded(t *testing.T) {
	dir := t.TempDir()
	m, err := images.New(dir, slog.New(slog.DiscardHandler), images.WithJailer(fillJailer{dir}),
		images.WithBuildDiskLimit(1<<20), images.WithBuildTimeout(2*time.Minute)) // the timeout: a hang guard only
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := m.Build(context.Background(), "acct", "", api.ImageSpec{AptPackages: []string{"jq"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Wait()
	got, err := m.Get(t.Context(), "acct", img.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != api.ImageFailed || got.FailureCode != api.CodeImageBuildFailed || !strings.Contains(got.FailureReason, "wrote more than 1 MiB") {
		t.Errorf("a build filling its image = %+v, want failed for writing more than 1 MiB", got)
	}
}

// fillJailer's build writes 64 KiB files into its image's /usr layer, one
// every 10 ms, until it is stopped (or has written 64 MiB).
type fillJailer struct{ dir string }

func (j fillJailer) RunBuild(ctx context.Context, id string, _ func(int) (jail.Spec, error), _ io.Writer) error {
	usr := filepath.Join(j.dir, strings.TrimPrefix(id, "build-"), "upper", "usr")
	if err := os.MkdirAll(usr, 0o700); err != nil {
		return err
	}
	for i := range 1024 {
		if err := os.WriteFile(filepath.Join(usr, fmt.Sprint(i)), make([]byte, 64<<10), 0o600); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestIdenticalBuildLabel: an identical build with a label gives the
// existing unlabelled image that label (before, the label was dropped and
// the image could not be found by it); with another label it is refused,
// naming the image's label; without one, or with the same, it returns the
// image as it is.
func TestIdenticalBuildLabel(t *testing.T) {
	release := make(chan struct{})
	m, err := images.New(t.TempDir(), slog.New(slog.DiscardHandler), images.WithJailer(holdJailer{release}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Wait()
	defer close(release)
	spec := api.ImageSpec{AptPackages: []string{"jq"}}
	first, _, err := m.Build(t.Context(), "acct", "", spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, created, err := m.Build(t.Context(), "acct", "tools", spec, nil)
	if err != nil || created || again.ID != first.ID || again.Label != "tools" {
		t.Fatalf("identical build labelled tools: %+v, created %v, %v", again, created, err)
	}
	if got, err := m.Get(t.Context(), "acct", first.ID); err != nil || got.Label != "tools" {
		t.Errorf("the image after: %+v, %v; want the label tools", got, err)
	}
	for _, label := range []string{"", "tools"} {
		if img, _, err := m.Build(t.Context(), "acct", label, spec, nil); err != nil || img.ID != first.ID || img.Label != "tools" {
			t.Errorf("identical build labelled %q: %+v, %v", label, img, err)
		}
	}
	_, _, err = m.Build(t.Context(), "acct", "other", spec, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || !strings.Contains(ae.Message, `"tools"`) {
		t.Errorf("identical build labelled other: %v, want 409 naming the label tools", err)
	}
}
