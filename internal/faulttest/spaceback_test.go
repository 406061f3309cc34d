package faulttest

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/servertest"
)

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// sizedUpload uploads n zero bytes to sandbox id with their length
// declared, and returns the answer's status and body.
func sizedUpload(t *testing.T, s *servertest.Server, id string, n int64) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, s.BaseURL+"/v1/sandboxes/"+id+"/files/raw?path=/workspace/sized", io.LimitReader(zeros{}, n))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = n
	req.Header.Set("Authorization", "Bearer "+s.APIKey)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("sized upload: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestRemovingGivesSpaceBack fills the host as `boxkite up` lays it out
// (sandboxes in the clone pool, a sparse XFS image on the host's
// filesystem; volumes and the database on the host's filesystem itself)
// with one upload larger than its free space, and then follows the 507's
// hint: removing sandboxes and volumes gives their space back to the host,
// the database takes writes again and the sandbox left answers, with no
// restart. Blocks freed inside the pool stayed taken from the host, and a
// removed volume's image stayed on it, before the pool was trimmed.
func TestRemovingGivesSpaceBack(t *testing.T) {
	needRoot(t)
	host := smallFS(t, 448)
	s := servertest.New(t, servertest.WithStateDir(host), servertest.WithDBPath(filepath.Join(host, "boxkite.db")),
		servertest.WithDriverConfig(func(c *local.Config) { c.Clones = local.ClonesXFS }))
	c := newClient(s)
	ctx := context.Background()
	create := func(label string, volumes map[string]string) string {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: label, VolumeMounts: volumes})
		if err != nil {
			t.Fatalf("create %s: %v", label, err)
		}
		return sb.ID
	}
	const written = 64 << 20
	// wantFreed waits for the host to have back about what was written.
	wantFreed := func(what string, before int64) {
		t.Helper()
		took := poll(t, what+" gives its space back to the host", 10*time.Second, func() bool {
			return freeBytes(t, host) > before+written*3/4
		})
		t.Logf("%s: space back on the host after %v", what, took.Round(time.Millisecond))
	}

	vol, err := c.CreateVolume(ctx, api.CreateVolumeRequest{Label: "v", SizeGB: 1})
	if err != nil {
		t.Fatal(err)
	}
	user := create("volume-user", map[string]string{vol.ID: "/workspace/data"})
	empty := freeBytes(t, host)
	if res, err := c.Exec(ctx, user, api.ExecRequest{Command: "head -c 64M /dev/urandom > /workspace/data/x && head -c 64M /dev/urandom > x && sync"}); err != nil || res.ExitCode != 0 {
		t.Fatalf("write into the volume and the workspace: %+v, %v", res, err)
	}
	before := freeBytes(t, host)
	if before > empty-2*written*3/4 {
		t.Fatalf("the host has %d MiB free after 128 MiB were written and synced, %d MiB before", before>>20, empty>>20)
	}
	if err := c.DeleteSandbox(ctx, user); err != nil {
		t.Fatal(err)
	}
	wantFreed("removing a sandbox", before)
	before = freeBytes(t, host)
	if err := c.DeleteVolume(ctx, vol.ID); err != nil {
		t.Fatal(err)
	}
	wantFreed("removing a volume", before)

	filler, bystander := create("filler", nil), create("bystander", nil)
	kept, err := c.Exec(ctx, bystander, api.ExecRequest{Command: "head -c 8M /dev/urandom > keep && sha256sum keep"})
	if err != nil || kept.ExitCode != 0 {
		t.Fatalf("write a file to keep: %+v, %v", kept, err)
	}
	free := freeBytes(t, host)
	// Declared too large, it is refused before a byte is written.
	if status, body := sizedUpload(t, s, filler, free+written); status != http.StatusInsufficientStorage || !strings.Contains(body, `"size_bytes"`) {
		t.Fatalf("upload declaring %d MiB onto a host with %d MiB free = %d %s; want 507 naming the size", (free+written)>>20, free>>20, status, body)
	}
	if now := freeBytes(t, host); now < free-written/4 {
		t.Fatalf("the refused upload took %d MiB of the host", (free-now)>>20)
	}
	// Of unknown length, it runs until the host is full.
	_, err = c.UploadFile(ctx, filler, "/workspace/big", io.LimitReader(zeros{}, free+written))
	if code := apiCode(err); code != api.CodeInsufficientStorage {
		t.Fatalf("upload of %d MiB onto a host with %d MiB free: %v; want 507 %s", (free+written)>>20, free>>20, err, api.CodeInsufficientStorage)
	}
	t.Logf("upload past the host's %d MiB free: %v", free>>20, err)

	// A server restarted while the host is full adopts the sandboxes it
	// froze, though their sidecars cannot answer: they are not lost.
	s.Restart(t)
	c = newClient(s)
	for _, id := range []string{filler, bystander} {
		if sb, err := c.Sandbox(ctx, id); err != nil || sb.Status != api.StatusActive {
			t.Fatalf("sandbox %s after a restart on a full host: %+v, %v; want it active (frozen)", id, sb, err)
		}
	}

	// The database shares the full filesystem: until space comes back the
	// removal may be refused with a stable code, never performed and lost.
	before = freeBytes(t, host)
	poll(t, "removing the filler", 10*time.Second, func() bool {
		err := c.DeleteSandbox(ctx, filler)
		switch code := apiCode(err); {
		case err == nil, code == api.CodeNotFound:
			return true
		case code == api.CodeInsufficientStorage, code == api.CodeServiceUnavailable, code == api.CodeAuditUnavailable:
			return false
		}
		t.Fatalf("remove the filler on a full host: %v; want 204, or 507/503 with a stable code", err)
		return false
	})
	wantFreed("removing the sandbox that filled the host", before)
	poll(t, "the server is ready again", 10*time.Second, func() bool { return c.Ready(ctx) == nil })
	poll(t, "the sandbox left answers exec", 10*time.Second, func() bool {
		res, err := c.Exec(ctx, bystander, api.ExecRequest{Command: "sha256sum keep"})
		if err == nil && res.Stdout != kept.Stdout {
			t.Fatalf("the file written before the host filled reads %q, want %q", res.Stdout, kept.Stdout)
		}
		return err == nil
	})
}
