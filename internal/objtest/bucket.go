package objtest

import (
	"context"
	"net/url"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"google.golang.org/api/option"

	"github.com/boxkite/boxkite/server/storagesync"
)

// DeleteBucket deletes the store's bucket (Azure: container) outright,
// with every object in it, as an operator's `aws s3 rb --force` would:
// what the sync meets afterwards is a bucket that does not exist, not an
// empty one.
func (s *Server) DeleteBucket(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Config
	if c.Kind != "azure" { // S3 and GCS delete only an empty bucket
		b, err := storagesync.Open(ctx, c)
		if err != nil {
			t.Fatalf("objtest: open %s: %v", c.Kind, err)
		}
		for k := range ListRaw(t, b, "") {
			if err := b.Delete(ctx, k); err != nil {
				t.Fatalf("objtest: empty the bucket: %v", err)
			}
		}
	}
	var err error
	switch c.Kind {
	case "s3":
		err = deleteS3Bucket(ctx, c)
	case "azure":
		var cl *container.Client
		if cl, err = container.NewClientFromConnectionString(c.ConnectionString, c.Bucket, nil); err == nil {
			_, err = cl.Delete(ctx, nil)
		}
	case "gcs":
		var cl *storage.Client
		if cl, err = storage.NewClient(ctx, option.WithoutAuthentication(), option.WithEndpoint(c.Endpoint)); err == nil {
			err = cl.Bucket(c.Bucket).Delete(ctx)
			cl.Close()
		}
	}
	if err != nil {
		t.Fatalf("objtest: delete %s bucket %s: %v", c.Kind, c.Bucket, err)
	}
}

func deleteS3Bucket(ctx context.Context, c storagesync.Config) error {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return err
	}
	cl, err := minio.New(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""), Region: c.Region, BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return err
	}
	return cl.RemoveBucket(ctx, c.Bucket)
}

// MakeBucket makes the store's bucket again after DeleteBucket, empty, as
// an operator would: trying again for a while, as a store may refuse the
// name of a bucket it is still deleting (Azure answers 409
// ContainerBeingDeleted).
func (s *Server) MakeBucket(t testing.TB) {
	t.Helper()
	c := s.Config
	c.CreateBucket = true
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err = storagesync.Open(ctx, c)
		cancel()
		if err == nil {
			return
		}
	}
	t.Fatalf("objtest: make %s bucket %s: %v", c.Kind, c.Bucket, err)
}
