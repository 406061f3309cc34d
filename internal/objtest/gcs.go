package objtest

import (
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/boxkite/boxkite/server/storagesync"
	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// startFakeGCS runs fake-gcs-server in this process, keeping its objects
// in a directory so that a restart finds them.
func startFakeGCS(t testing.TB, pick portPicker) (*Server, error) {
	t.Helper()
	ports, err := pick(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	opts := fakestorage.Options{Host: "127.0.0.1", Port: uint16(port), Scheme: "http", PublicHost: fmt.Sprintf("127.0.0.1:%d", port), StorageRoot: dataDir(t), Writer: io.Discard}
	var (
		mu  sync.Mutex
		srv *fakestorage.Server
	)
	start := func() error {
		mu.Lock()
		defer mu.Unlock()
		s, err := fakestorage.NewServerWithOptions(opts)
		if err != nil {
			return fmt.Errorf("start fake-gcs-server: %w", err)
		}
		srv = s
		return nil
	}
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if srv != nil {
			srv.Stop()
			srv = nil
		}
	}
	if err := start(); err != nil {
		return nil, err
	}
	return &Server{
		Config: storagesync.Config{Kind: "gcs", Endpoint: fmt.Sprintf("http://127.0.0.1:%d/storage/v1/", port)},
		stop:   stop, start: start,
		// In this process: a port taken makes start fail, it never exits.
		exited: func() <-chan struct{} { return nil },
	}, nil
}
