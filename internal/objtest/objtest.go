// Package objtest starts object stores on 127.0.0.1 for the storage sync
// tests: SeaweedFS (S3), Azurite (Azure Blob) and fake-gcs-server (GCS).
// .ci/run installs the first two under $HOME/.cache/boxkite-tools; a test
// that needs a missing one is skipped, except in CI (CI set), where it fails.
package objtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
}

// Stop stops the store, keeping its data; Start starts it again on the
// same address.
func (s *Server) Stop() { s.stop() }

// Start restarts a stopped store and waits until it answers.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("objtest: restart %s: %v", s.Config.Kind, err)
	}
	waitReady(t, s.Config)
}

// Start starts a store of kind ("s3", "azure" or "gcs") for t, stopped at
// its end.
func Start(t testing.TB, kind string) *Server {
	t.Helper()
	var s *Server
	switch kind {
	case "s3":
		s = startSeaweed(t)
	case "azure":
		s = startAzurite(t)
	case "gcs":
		s = startFakeGCS(t)
	default:
		t.Fatalf("objtest: kind %q", kind)
	}
	t.Cleanup(s.stop)
	s.Config.Bucket = "bk-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(s.Config.Bucket) > 50 {
		s.Config.Bucket = s.Config.Bucket[:50]
	}
	s.Config.Bucket = strings.TrimRight(s.Config.Bucket, "-")
	s.Config.CreateBucket = true
	waitReady(t, s.Config)
	s.Config.CreateBucket = false
	return s
}

// waitReady opens the store (creating its bucket) and stores an object
// until both work: SeaweedFS takes writes only once a volume server has
// joined its master.
func waitReady(t testing.TB, c storagesync.Config) {
	t.Helper()
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
			return
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("objtest: %s store not ready: %v", c.Kind, last)
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

// freePort returns a port free on 127.0.0.1 now, outside the kernel's
// ephemeral range: a store is stopped and restarted on the same ports.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := testport.Pick()
	if err != nil {
		t.Fatalf("objtest: %v", err)
	}
	return port
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

// List returns what b holds under prefix: each object's key with prefix
// cut off, and its size.
func List(t testing.TB, b storagesync.Backend, prefix string) map[string]int64 {
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
