package storagesync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

const (
	// gcsAttempts bounds the attempts of one GCS call.
	gcsAttempts = 4
	// gcsChunk is the most of an object a put holds in memory and sends
	// in one request.
	gcsChunk = 8 << 20
)

// gcsBackend is a Google Cloud Storage bucket, through the official client.
type gcsBackend struct {
	bkt    *storage.BucketHandle
	name   string // the bucket
	region string
	create bool // Config.CreateBucket
}

func openGCS(ctx context.Context, c Config) (Backend, error) {
	var opts []option.ClientOption
	switch {
	case c.CredentialsFile != "":
		opts = append(opts, option.WithAuthCredentialsFile(option.ServiceAccount, c.CredentialsFile))
	case c.Endpoint != "":
		// An emulator takes no credentials.
		opts = append(opts, option.WithoutAuthentication())
	}
	if c.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(c.Endpoint))
	}
	cl, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	// The client retries an idempotent call (a listing, a read) until its
	// context ends, 10 minutes for a flush: against a store that is down,
	// a forced flush or a listing would hang. A few attempts (at most
	// about 7 s of backoff, as minio-go's and Azure's defaults) and the
	// sync's own retries with backoff do the rest.
	bkt := cl.Bucket(c.Bucket).Retryer(storage.WithMaxAttempts(gcsAttempts))
	b := &gcsBackend{bkt: bkt, name: c.Bucket, region: c.Region, create: c.CreateBucket}
	if _, err := b.ensureBucket(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *gcsBackend) createsBucket() bool { return b.create }

// ensureBucket checks the bucket and makes it when it is missing and
// b.create is set; it reports whether it made it.
func (b *gcsBackend) ensureBucket(ctx context.Context) (bool, error) {
	_, err := b.bkt.Attrs(ctx)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, storage.ErrBucketNotExist) {
		return false, fmt.Errorf("check bucket %s: %w", b.name, err)
	}
	if !b.create {
		return false, fmt.Errorf("bucket %s does not exist", b.name)
	}
	if err := b.bkt.Create(ctx, b.region, nil); err != nil {
		return false, fmt.Errorf("create bucket %s: %w", b.name, err)
	}
	return true, nil
}

// noBucket is err, or when it says the bucket is missing a noBucketError.
// A write of an object answers a plain 404 for a missing bucket (the
// client maps only the bucket's own calls to ErrBucketNotExist): an
// object write has no other reason to.
func (b *gcsBackend) noBucket(err error, write bool) error {
	var ge *googleapi.Error
	if errors.Is(err, storage.ErrBucketNotExist) || write && errors.As(err, &ge) && ge.Code == http.StatusNotFound {
		return &noBucketError{bucket: b.name, err: err}
	}
	return err
}

func (b *gcsBackend) Kind() string { return "gcs" }

func (b *gcsBackend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // an unclosed writer is abandoned, never committed
	w := b.bkt.Object(key).NewWriter(ctx)
	// Never a ChunkSize of 0 (one request streamed as it is read): when
	// the reader fails halfway, the client's multipart body still ends
	// with its closing boundary, and the server can commit the half it
	// had (fake-gcs-server did about one put in ten; GCS would too). A
	// chunk one byte larger than a small object is read whole before
	// anything is sent, then sent in one request; a larger object goes
	// as a resumable upload, finished only by its last chunk.
	w.ChunkSize = gcsChunk
	if size >= 0 && size < gcsChunk {
		w.ChunkSize = int(size) + 1
	}
	w.ContentType = "application/octet-stream"
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("put %s: %w", key, b.noBucket(err, true))
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("put %s: %w", key, b.noBucket(err, true))
	}
	return nil
}

func (b *gcsBackend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.bkt.Object(key).NewReader(ctx)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return r, nil
}

func (b *gcsBackend) Delete(ctx context.Context, key string) error {
	err := b.bkt.Object(key).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

func (b *gcsBackend) List(ctx context.Context, prefix string, fn func(Object) error) error {
	it := b.bkt.Objects(ctx, &storage.Query{Prefix: prefix})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, b.noBucket(err, false))
		}
		if err := fn(Object{Key: a.Name, Size: a.Size, Modified: a.Updated}); err != nil {
			return err
		}
	}
}
