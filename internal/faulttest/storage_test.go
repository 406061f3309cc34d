package faulttest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/servertest"
)

// A stored write is one the server acknowledged: the file's path in its
// sandbox and the SHA-256 of what was written.
type stored struct {
	writer, sandbox, path, sum string
}

// A writer writes one more chunk into its sandbox and returns what was
// acknowledged; an exec whose own command failed (a read-only disk)
// returns errCommandFailed, acknowledging nothing.
type writer struct {
	name  string
	write func(ctx context.Context, i int) ([]stored, error)
}

var errCommandFailed = errors.New("the command in the sandbox failed")

// chunk is the size of one write: the host fills in a dozen of them.
const chunk = 24 << 20

// randomBytes is n bytes of a seeded stream (incompressible, repeatable).
func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	_, _ = r.Read(b)
	return b
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestHostStoreFills fills the host filesystem under the local driver's
// state (a small loop-mounted ext4) from four writers at once: uploads,
// archive extraction, an exec writing files, and an exec writing into a
// volume. Every answer must be 2xx or 507 insufficient_storage; each
// writer must be stopped (507, or its own command failing on a disk made
// read-only); and once space is given back, after a sync and a server
// restart, every write that was acknowledged reads back byte for byte.
//
// With the watermark (the default), uploads are refused before the host
// is full and sandboxes that keep writing are frozen; without it, the
// host fills to the last block and each write is flushed before it is
// acknowledged, so the one that does not fit answers 507 instead.
func TestHostStoreFills(t *testing.T) {
	needRoot(t)
	for _, tt := range []struct {
		name      string
		watermark int64
	}{
		{"with the watermark", 96 << 20},
		{"without a watermark", -1},
	} {
		t.Run(tt.name, func(t *testing.T) { fillHostStore(t, tt.watermark) })
	}
}

func fillHostStore(t *testing.T, watermark int64) {
	host := smallFS(t, 640)
	s := servertest.New(t, servertest.WithStateDir(host), servertest.WithDriverConfig(func(c *local.Config) {
		c.Host.MinFreeDisk = watermark
	}))
	c := newClient(s)
	ctx := context.Background()
	vol, err := c.CreateVolume(ctx, api.CreateVolumeRequest{Label: "fill", SizeGB: 2})
	if err != nil {
		t.Fatal(err)
	}
	sandbox := func(label string, volumes map[string]string) string {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: label, VolumeMounts: volumes})
		if err != nil {
			t.Fatalf("create %s: %v", label, err)
		}
		return sb.ID
	}
	up, arch, ex, vw := sandbox("upload", nil), sandbox("archive", nil), sandbox("exec", nil), sandbox("volume", map[string]string{vol.ID: "/workspace/data"})
	// Ballast takes what the writers should not get, to give it back at
	// the end: the acknowledged data itself must stay.
	ballastFile := ballast(t, host, freeBytes(t, host)-(max(watermark, 0)+10*chunk))
	t.Logf("host filesystem: %d MiB free for the writers, watermark %d MiB", freeBytes(t, host)>>20, watermark>>20)

	writers := []writer{
		{"upload", func(ctx context.Context, i int) ([]stored, error) {
			data := randomBytes(uint64(i), chunk)
			path := fmt.Sprintf("/workspace/up-%d.bin", i)
			if _, err := c.UploadFile(ctx, up, path, bytes.NewReader(data)); err != nil {
				return nil, err
			}
			return []stored{{"upload", up, path, sum(data)}}, nil
		}},
		{"archive", func(ctx context.Context, i int) ([]stored, error) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			var out []stored
			for j := range 2 {
				data := randomBytes(uint64(1000+2*i+j), chunk/2)
				name := fmt.Sprintf("ar-%d-%d.bin", i, j)
				if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
					return nil, err
				}
				tw.Write(data)
				out = append(out, stored{"archive", arch, "/workspace/in/" + name, sum(data)})
			}
			tw.Close()
			if _, err := c.UploadArchive(ctx, arch, "/workspace/in", &buf); err != nil {
				return nil, err
			}
			return out, nil
		}},
		{"exec", execWriter(c, ex, "/workspace/ex")},
		{"volume", execWriter(c, vw, "/workspace/data/v")},
	}

	stopped := map[string]string{} // writer → how it was stopped
	var acked []stored
	for i := 0; i < 60 && len(stopped) < len(writers); i++ {
		for _, w := range writers {
			if stopped[w.name] != "" {
				continue
			}
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			out, err := w.write(wctx, i)
			cancel()
			switch {
			case err == nil:
				acked = append(acked, out...)
			case errors.Is(err, errCommandFailed):
				stopped[w.name] = "its command failed on a full disk"
			case apiCode(err) == api.CodeInsufficientStorage:
				stopped[w.name] = "507: " + err.Error()
			default:
				t.Errorf("%s write %d: %v; want 2xx or 507 insufficient_storage", w.name, i, err)
				stopped[w.name] = "failed"
			}
		}
	}
	for _, w := range writers {
		t.Logf("%s: stopped by %s", w.name, stopped[w.name])
		if stopped[w.name] == "" {
			t.Errorf("%s was never stopped: the host did not fill", w.name)
		}
	}
	// An exec answered 507 after it ran is in its sandbox's log, followed
	// by the system entry that says what it wrote was not stored.
	for _, w := range []struct{ name, id string }{{"exec", ex}, {"volume", vw}} {
		if strings.Contains(stopped[w.name], "was performed") && !notStoredAfterExec(t, c, w.id) {
			t.Errorf("%s: an exec was answered 507 after it ran, but no not_stored entry names its entry", w.name)
		}
	}
	if watermark > 0 && !strings.HasPrefix(stopped["upload"], "507") {
		t.Errorf("uploads were stopped by %q, want 507 insufficient_storage", stopped["upload"])
	}
	t.Logf("%d writes acknowledged; %d MiB free", len(acked), freeBytes(t, host)>>20)

	// Space back: the frozen sandboxes thaw.
	if err := os.Remove(ballastFile); err != nil {
		t.Fatal(err)
	}
	poll(t, "the sandboxes to thaw", time.Minute, func() bool {
		st, err := c.Host(ctx)
		if err != nil {
			return false
		}
		for _, sb := range st.Sandboxes {
			if sb.Frozen {
				return false
			}
		}
		return !st.Disk.Refusing
	})
	if watermark > 0 {
		// Each freeze and thaw is in the sandbox's log, for its watchers
		// (the thaw's entry follows the driver's thaw, so wait for it).
		for _, id := range []string{ex, vw} {
			var ops []string
			poll(t, "the thaw of "+id+" in its log", time.Minute, func() bool {
				ops = nil
				entries, _ := wholeLog(t, c, id)
				for _, e := range entries {
					if e.Source == api.LogSourceSystem {
						ops = append(ops, e.Operation)
					}
				}
				return slices.Contains(ops, "sandbox_thawed")
			})
			if i := slices.Index(ops, "sandbox_frozen"); i < 0 || i > slices.Index(ops, "sandbox_thawed") {
				t.Errorf("system entries of frozen sandbox %s: %v, want sandbox_frozen, then sandbox_thawed", id, ops)
			}
		}
	}
	unix.Sync()
	s.Restart(t)
	c = newClient(s)
	for _, a := range acked {
		res, err := c.Exec(ctx, a.sandbox, api.ExecRequest{Command: "sha256sum " + a.path})
		if err != nil || res.ExitCode != 0 {
			t.Errorf("%s %s acknowledged, read back after the restart: %+v, %v", a.writer, a.path, res, err)
			continue
		}
		if got, _, _ := strings.Cut(res.Stdout, " "); got != a.sum {
			t.Errorf("%s %s acknowledged with sha256 %s, reads back as %s", a.writer, a.path, a.sum, got)
		}
	}
}

// execWriter writes a chunk of random data to prefix-N.bin with an exec
// and acknowledges it with the checksum the command printed.
func execWriter(c *client.Client, id, prefix string) func(ctx context.Context, i int) ([]stored, error) {
	return func(ctx context.Context, i int) ([]stored, error) {
		path := fmt.Sprintf("%s-%d.bin", prefix, i)
		res, err := c.Exec(ctx, id, api.ExecRequest{
			Command: fmt.Sprintf("head -c %d /dev/urandom > %s && sha256sum %s", chunk, path, path), Timeout: 120,
		})
		if err != nil {
			return nil, err
		}
		if res.ExitCode != 0 {
			return nil, fmt.Errorf("%w: exit code %d: %s", errCommandFailed, res.ExitCode, res.Stderr)
		}
		got, _, _ := strings.Cut(res.Stdout, " ")
		return []stored{{"exec", id, path, got}}, nil
	}
}

// notStoredAfterExec reports whether sandbox id's log has a not_stored
// system entry naming an exec's entry before it.
func notStoredAfterExec(t *testing.T, c *client.Client, id string) bool {
	entries, _ := wholeLog(t, c, id)
	execs := map[string]bool{}
	for _, e := range entries {
		var d struct{ Entry, Operation string }
		switch {
		case e.Operation == "exec":
			execs[e.ID] = true
		case e.Source == api.LogSourceSystem && e.Operation == "not_stored" && json.Unmarshal(e.Detail, &d) == nil:
			if d.Operation == "exec" && execs[d.Entry] {
				return true
			}
		}
	}
	return false
}
