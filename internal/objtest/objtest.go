// Package objtest starts object stores on 127.0.0.1 for the storage sync
// tests: SeaweedFS (S3), Azurite (Azure Blob) and fake-gcs-server (GCS).
// .ci/run installs the first two under $HOME/.cache/boxkite-tools; a test
// that needs a missing one is skipped, except in CI (CI set), where it fails.
package objtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/testport"
	"github.com/boxkite/boxkite/server/storagesync"
)

// Versions of the tools .ci/run installs, which name their directories
// under $HOME/.cache/boxkite-tools.
const (
	SeaweedFSVersion = "v0.0.0-20261109003541-7506e5f91cd6"
	AzuriteVersion   = "3.37.0"
)

// Kinds lists the backends a suite runs against.
var Kinds = []string{"s3", "azure", "gcs"}

// Server is an object store running for one test.
type Server struct {
	// Config reaches the store, with a fresh bucket that already exists.
	Config storagesync.Config
	stop   func()
	start  func() error
	// exited is closed when the store's process has exited (nil for a
	// store in this process).
	exited func() <-chan struct{}
	// metadata is the file Azurite keeps its objects' records in ("" for
	// the others, which write them at once).
	metadata string
}

// Settle waits until a stop of the store keeps the object key: Azurite
// holds its records in memory and writes them out every 5 s, so a kill
// before that loses objects it acknowledged (and can lose the container).
func (s *Server) Settle(t testing.TB, key string) {
	t.Helper()
	if s.metadata == "" {
		return
	}
	Wait(t, "Azurite's record of "+key+" on disk", time.Minute, func() bool {
		data, err := os.ReadFile(s.metadata)
		return err == nil && strings.Contains(string(data), `"`+key+`"`)
	})
}

// errExited is waitReady's answer when the store's process exits first:
// a port of its own taken between the pick and the bind, since ports are
// picked by hand (internal/testport) and another test may hold one.
var errExited = errors.New("the store's process exited before it answered")

// startAttempts bounds how often a store whose process exits at start is
// started again: on fresh ports the first time, on the same ports (which
// the system under test already knows) after a Stop.
const startAttempts = 5

// Stop stops the store, keeping its data; Start starts it again on the
// same address.
func (s *Server) Stop() { s.stop() }

// Start restarts a stopped store and waits until it answers. A port of
// the store's taken while it was down (by another test's server, for a
// moment or for longer) makes its process exit: it is started again, on
// the same ports, a few times a second apart.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		err := s.start()
		if err == nil {
			err = waitReady(s.Config, s.exited())
		}
		if err == nil {
			return
		}
		s.stop()
		if attempt == startAttempts {
			t.Fatalf("objtest: restart %s: %v (%d attempts)", s.Config.Kind, err, attempt)
		}
		t.Logf("objtest: restart %s: %v; trying again", s.Config.Kind, err)
		time.Sleep(time.Second)
	}
}

// Start starts a store of kind ("s3", "azure" or "gcs") for t, stopped at
// its end. A store whose process exits before it answers (a port taken
// between the pick and the bind) is started again on other ports.
func Start(t testing.TB, kind string) *Server {
	t.Helper()
	// Distinct and outside the kernel's ephemeral range: a store is
	// stopped and restarted on the same ports.
	return start(t, kind, testport.PickN)
}

// portPicker returns n distinct ports for a store to listen on.
type portPicker func(n int) ([]int, error)

func start(t testing.TB, kind string, pick portPicker) *Server {
	t.Helper()
	// A bucket name holds lower-case letters, digits and '-' only.
	bucket := "bk-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	if len(bucket) > 50 {
		bucket = bucket[:50]
	}
	bucket = strings.TrimRight(bucket, "-")
	for attempt := 1; ; attempt++ {
		s, err := startKind(t, kind, pick)
		if err == nil {
			t.Cleanup(s.stop)
			s.Config.Bucket = bucket
			s.Config.CreateBucket = true
			err = waitReady(s.Config, s.exited())
			s.Config.CreateBucket = false
			if err == nil {
				return s
			}
			s.stop()
		}
		if attempt == startAttempts || !errors.Is(err, errExited) && !isAddrInUse(err) {
			t.Fatalf("objtest: start %s: %v", kind, err)
		}
		t.Logf("objtest: start %s: %v; starting again on other ports", kind, err)
	}
}

func startKind(t testing.TB, kind string, pick portPicker) (*Server, error) {
	t.Helper()
	switch kind {
	case "s3":
		return startSeaweed(t, pick)
	case "azure":
		return startAzurite(t, pick)
	case "gcs":
		return startFakeGCS(t, pick)
	}
	t.Fatalf("objtest: kind %q", kind)
	return nil, nil
}

func isAddrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }

// waitReady opens the store (creating its bucket) and
// stores an object until both work: SeaweedFS takes writes only once a
// volume server has joined its master. It gives up when exited closes.
func waitReady(c storagesync.Config, exited <-chan struct{}) error {
	// Also after a restart: Azurite keeps its containers' metadata in
	// memory and writes it out now and then, so a container made just
	// before a stop can be gone after it.
	c.CreateBucket = true
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b, err := storagesync.Open(ctx, c)
		if err == nil {
			err = b.Put(ctx, ".objtest-ready", strings.NewReader("ok"), 2)
			if err == nil {
				err = b.Delete(ctx, ".objtest-ready")
			}
		}
		cancel()
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("%w (last try: %v)", errExited, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after 90s: %w", last)
}

// tool finds a tool: the environment variable env, else path under
// $HOME/.cache/boxkite-tools. It skips t when there is none (fails it in CI).
func tool(t testing.TB, env, path, what string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".cache", "boxkite-tools", path)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	msg := fmt.Sprintf("objtest: %s not found at %s (set %s, or run the install step of .ci/run)", what, p, env)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Wait looks at ok every quarter second until it holds, and fails t when
// it has not within: what the storage tests wait for is the bucket (or
// the sync's state) catching up with what the sandbox wrote.
func Wait(t testing.TB, what string, within time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
	}
}

// ListRaw returns what b holds under prefix: each object's key with
// prefix cut off, and its size.
func ListRaw(t testing.TB, b storagesync.Backend, prefix string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	if err := b.List(context.Background(), prefix, func(o storagesync.Object) error {
		out[strings.TrimPrefix(o.Key, prefix)] = o.Size
		return nil
	}); err != nil {
		t.Fatalf("objtest: list %s: %v", prefix, err)
	}
	return out
}

// List is ListRaw as boxkite reads a sandbox's prefix: when prefix holds
// storagesync.NamesMarker, each name is the workspace path it holds
// (storagesync.WorkspacePath) and the marker is left out; the object of
// a path p is prefix+storagesync.ObjectName(p).
func List(t testing.TB, b storagesync.Backend, prefix string) map[string]int64 {
	t.Helper()
	raw := ListRaw(t, b, prefix)
	if _, ok := raw[storagesync.NamesMarker]; !ok {
		return raw
	}
	out := make(map[string]int64, len(raw))
	for name, size := range raw {
		if p, ok := storagesync.WorkspacePath(name); ok {
			out[p] = size
		}
	}
	return out
}

// Holds reports whether b holds exactly want under prefix (List's keys
// and sizes): the storage tests' "every file back" condition.
func Holds(t testing.TB, b storagesync.Backend, prefix string, want map[string]int64) bool {
	t.Helper()
	return maps.Equal(List(t, b, prefix), want)
}

// Clear deletes every object b holds under prefix (a sandbox's marker
// too), and fails t unless none is left.
func Clear(t testing.TB, b storagesync.Backend, prefix string) {
	t.Helper()
	for k := range ListRaw(t, b, prefix) {
		if err := b.Delete(context.Background(), prefix+k); err != nil {
			t.Fatalf("objtest: delete %s: %v", prefix+k, err)
		}
	}
	if n := len(ListRaw(t, b, prefix)); n != 0 {
		t.Fatalf("objtest: %s still holds %d objects after deleting them", prefix, n)
	}
}

// Read returns the content of b's object key, and fails t when it cannot.
func Read(t testing.TB, b storagesync.Backend, key string) []byte {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("objtest: get %s: %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("objtest: read %s: %v", key, err)
	}
	return data
}
