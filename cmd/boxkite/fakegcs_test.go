package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdFakeGCS starts fake-gcs-server in the test process on a free
// loopback port, with an empty bucket BUCKET, for the rest of the script,
// and sets $GCS_ENDPOINT to its address: a store for boxkite-server's
// --storage-kind gcs (docs/storage.md).
func cmdFakeGCS(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakegcs BUCKET")
	}
	// The store serves on this listener, kept open: a port closed here for
	// fake-gcs-server to bind again could be taken meanwhile (listens on
	// port 0 and outgoing connections share the kernel's ephemeral range).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Fatalf("fakegcs: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	dir, err := os.MkdirTemp("", "bk-gcs-")
	ts.Check(err)
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true, Scheme: "http", PublicHost: fmt.Sprintf("127.0.0.1:%d", port),
		StorageRoot: dir, Writer: io.Discard,
	})
	if err != nil {
		l.Close()
		ts.Fatalf("fakegcs: %v", err)
	}
	hs := &http.Server{Handler: srv.HTTPHandler(), ReadHeaderTimeout: time.Minute}
	go func() { _ = hs.Serve(l) }()
	ts.Defer(func() {
		hs.Close()
		srv.Stop()
		os.RemoveAll(dir)
	})
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: args[0]})
	ts.Setenv("GCS_ENDPOINT", fmt.Sprintf("http://127.0.0.1:%d/storage/v1/", port))
}
