package servertest_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/images"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestImageDeleteRacesSnapshot: between `images rm`'s check of the
// snapshots and its check of the image's users (a hook runs there), a
// snapshot of the one sandbox booted from the image is taken and the
// sandbox destroyed. The image is kept (409 image_in_use naming the
// snapshot): the snapshot recorded its use of the image under the image
// store's admission lock. Before, the image was removed and the snapshot
// could not be restored.
func TestImageDeleteRacesSnapshot(t *testing.T) {
	t.Parallel()
	var s *servertest.Server
	var sandbox atomic.Value // the sandbox the hook snapshots and destroys, once
	sandbox.Store("")
	type outcome struct {
		snapshot string
		err      error
	}
	hooked := make(chan outcome, 1)
	s = servertest.New(t, servertest.WithImages(t.TempDir(), images.WithDeleteHooksForTests(func(string) {
		id := sandbox.Swap("").(string)
		if id == "" {
			return
		}
		c := client.New(s.BaseURL, s.APIKey)
		ctx := context.Background()
		sn, err := c.CreateSnapshot(ctx, id, "between the checks")
		if err == nil {
			err = c.DeleteSandbox(ctx, id)
		}
		if err != nil {
			hooked <- outcome{err: fmt.Errorf("snapshot and destroy between the checks: %w", err)}
			return
		}
		hooked <- outcome{snapshot: sn.ID}
	}, nil)))
	c := client.New(s.BaseURL, s.APIKey)
	ctx := context.Background()
	img := importedImage(t, s, e2bHome)
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{ImageID: img})
	if err != nil {
		t.Fatal(err)
	}
	sandbox.Store(sb.ID)
	err = c.DeleteImage(ctx, img)
	var snap string
	select {
	case got := <-hooked:
		if got.err != nil {
			t.Fatal(got.err)
		}
		snap = got.snapshot
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("the hook did not run")
	}
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Status != http.StatusConflict || e.Code != api.CodeImageInUse || !strings.Contains(e.Hint, snap) {
		t.Fatalf("delete an image a snapshot taken meanwhile needs = %v, want 409 image_in_use naming %s", err, snap)
	}
	restored, err := c.RestoreSnapshot(ctx, snap, "restored")
	if err != nil {
		t.Fatalf("restore the snapshot taken during images rm: %v", err)
	}
	if res, err := c.Exec(ctx, restored.ID, api.ExecRequest{Command: "read m < /etc/boxkite-image-marker && echo $m"}); err != nil || strings.TrimSpace(res.Stdout) != imageMarker {
		t.Errorf("restored sandbox = %+v, %v; want its image's marker", res, err)
	}
}

// importedImage imports the test image, home its /home, and waits until
// it is completed.
func importedImage(t *testing.T, s *servertest.Server, home []tar.Header) string {
	t.Helper()
	resp, body := doRaw(t, s, s.APIKey, "POST", "/v1/images/import?label=tiny", bytes.NewReader(imageArchive(t, home)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("import: %d %s", resp.StatusCode, body)
	}
	var img api.Image
	mustJSON(t, body, &img)
	for deadline := time.Now().Add(time.Minute); img.Status != api.ImageCompleted; time.Sleep(50 * time.Millisecond) {
		if img.Status == api.ImageFailed || time.Now().After(deadline) {
			t.Fatalf("image: %+v", img)
		}
		_, body = do(t, s, "GET", "/v1/images/"+img.ID, nil, "")
		mustJSON(t, body, &img)
	}
	return img.ID
}
