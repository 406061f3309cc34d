package servertest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestStorageSyncBucketDeleted: a bucket deleted outright behind the sync
// (not emptied) fails the flushes that meet it, naming it, and once the
// operator makes it again the sync stores every file again, not only the
// ones written since; a server whose backend may create its bucket
// (Config.CreateBucket, as Open at start) makes it at the flush that
// finds it missing. Before, the index still claimed every object that
// went with the bucket, and only a forced flush or a restart brought them
// back. Azurite and fake-gcs-server answer a missing bucket as the clouds
// do; SeaweedFS makes one again on the next put (storagesync's
// TestS3NoSuchBucket checks S3's answer).
func TestStorageSyncBucketDeleted(t *testing.T) {
	for _, kind := range []string{"azure", "gcs"} {
		for _, create := range []bool{false, true} {
			name := kind + map[bool]string{false: "/operator makes it", true: "/create bucket"}[create]
			t.Run(name, func(t *testing.T) { testStorageSyncBucketDeleted(t, kind, create) })
		}
	}
}

func testStorageSyncBucketDeleted(t *testing.T, kind string, create bool) {
	r := startStorageRun(t, kind, func(c *server.StorageConfig, obj *objtest.Server) {
		if !create {
			return
		}
		oc := obj.Config
		oc.CreateBucket = true
		b, err := storagesync.Open(context.Background(), oc)
		if err != nil {
			t.Fatal(err)
		}
		c.Backend = b
	})
	b, c, sb, prefix := r.b, r.c, r.sb, r.prefix
	ctx := context.Background()
	mustExec(t, c, sb.ID, `set -e
cd /workspace
mkdir -p 'd/ü b'
printf 'unicode\n' > 'd/ü b/ü.txt'
: > empty
for i in $(seq 1 10); do echo "small $i" > f$i.txt; done`)
	if _, err := c.FlushSync(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	want := objtest.List(t, b, prefix)
	if len(want) != 12 {
		t.Fatalf("after the first flush the bucket holds %v, want 12 files", want)
	}
	want["new.txt"] = 3
	back := func() bool {
		got, err := listQuiet(b, prefix)
		if err != nil || len(got) != len(want) {
			return false
		}
		for k, size := range want {
			if got[k] != size {
				return false
			}
		}
		return true
	}

	r.obj.DeleteBucket(t)
	// A write through the API is flushed at once: it meets the bucket missing.
	if _, err := c.WriteFile(ctx, sb.ID, api.FileCreateRequest{Path: "new.txt", Content: "new"}); err != nil {
		t.Fatal(err)
	}
	if create {
		// The write's flush made it, or the forced flush does.
		if _, err := c.FlushSync(ctx, sb.ID); err != nil {
			t.Fatalf("forced flush into a deleted bucket the server may create: %v", err)
		}
		if !back() {
			t.Errorf("after the forced flush the bucket holds %v, want %v", objtest.List(t, b, prefix), want)
		}
		return
	}
	objtest.Wait(t, "the flush to report the missing bucket", 60*time.Second, func() bool {
		st, err := c.SyncStatus(ctx, sb.ID)
		return err == nil && strings.Contains(st.LastError, "does not exist")
	})
	// A forced flush says the bucket is missing, not that the store could
	// not be reached (retrying alone would not help).
	_, err := c.FlushSync(ctx, sb.ID)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeStorageFailed || !strings.Contains(ae.Message, "bucket does not exist") || !strings.Contains(ae.Hint, "operator") {
		t.Errorf("forced flush into the deleted bucket: %v, want storage_failed saying the bucket does not exist, with a hint", err)
	}
	r.obj.MakeBucket(t)
	objtest.Wait(t, "every file back in the bucket made again", 2*storagesync.MaxBackoff, back)
}

// listQuiet is objtest.List without failing the test: the bucket may be
// missing while it is looked at. Its paths need no escaping.
func listQuiet(b storagesync.Backend, prefix string) (map[string]int64, error) {
	out := map[string]int64{}
	err := b.List(context.Background(), prefix, func(o storagesync.Object) error {
		out[strings.TrimPrefix(o.Key, prefix)] = o.Size
		return nil
	})
	delete(out, storagesync.NamesMarker)
	return out, err
}
