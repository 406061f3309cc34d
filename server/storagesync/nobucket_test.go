package storagesync_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestBackendBucketDeleted: a put or a listing into a bucket deleted
// outright says so (storagesync.ErrNoBucket, the bucket named), against
// Azurite and fake-gcs-server. SeaweedFS makes a bucket again on the next
// put and lists a missing one as empty, so S3's answer is checked against
// a server that answers as S3 does (TestS3NoSuchBucket).
func TestBackendBucketDeleted(t *testing.T) {
	for _, kind := range []string{"azure", "gcs"} {
		t.Run(kind, func(t *testing.T) {
			srv := objtest.Start(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b, err := storagesync.Open(ctx, srv.Config)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Put(ctx, "p/a", strings.NewReader("a"), 1); err != nil {
				t.Fatal(err)
			}
			srv.DeleteBucket(t)
			checkNoBucket(t, "put", srv.Config.Bucket, b.Put(ctx, "p/b", strings.NewReader("b"), 1))
			checkNoBucket(t, "list", srv.Config.Bucket, b.List(ctx, "p/", func(storagesync.Object) error { return nil }))
		})
	}
}

func checkNoBucket(t *testing.T, what, bucket string, err error) {
	t.Helper()
	if !errors.Is(err, storagesync.ErrNoBucket) || !strings.Contains(err.Error(), "bucket "+bucket+" does not exist") {
		t.Errorf("%s into a deleted bucket: %v, want ErrNoBucket naming %s", what, err, bucket)
	}
}

// TestS3NoSuchBucket: S3's NoSuchBucket answer to a put and a listing is
// ErrNoBucket.
func TestS3NoSuchBucket(t *testing.T) {
	var gone atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !gone.Load() {
			return // the bucket exists (Open's check)
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message><BucketName>bkt</BucketName></Error>`))
	}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := storagesync.Open(ctx, storagesync.Config{
		Kind: "s3", Bucket: "bkt", Endpoint: ts.URL, Region: "us-east-1", PathStyle: true, AccessKey: "k", SecretKey: "s",
	})
	if err != nil {
		t.Fatal(err)
	}
	gone.Store(true)
	checkNoBucket(t, "put", "bkt", b.Put(ctx, "p/b", strings.NewReader("b"), 1))
	checkNoBucket(t, "list", "bkt", b.List(ctx, "p/", func(storagesync.Object) error { return nil }))
}
