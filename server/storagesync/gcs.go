package storagesync

import (
	"context"
	"errors"
	"fmt"
	"io"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// gcsAttempts bounds the attempts of one GCS call.
const gcsAttempts = 4

// gcsBackend is a Google Cloud Storage bucket, through the official client.
type gcsBackend struct {
	bkt *storage.BucketHandle
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
	if _, err := bkt.Attrs(ctx); err != nil {
		if !errors.Is(err, storage.ErrBucketNotExist) {
			return nil, fmt.Errorf("check bucket %s: %w", c.Bucket, err)
		}
		if !c.CreateBucket {
			return nil, fmt.Errorf("bucket %s does not exist", c.Bucket)
		}
		if err := bkt.Create(ctx, c.Region, nil); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", c.Bucket, err)
		}
	}
	return &gcsBackend{bkt: bkt}, nil
}

func (b *gcsBackend) Kind() string { return "gcs" }

func (b *gcsBackend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // an unclosed writer is abandoned, never committed
	w := b.bkt.Object(key).NewWriter(ctx)
	w.ChunkSize = 8 << 20
	if size >= 0 && size < 8<<20 {
		w.ChunkSize = 0 // one request, no resumable session
	}
	w.ContentType = "application/octet-stream"
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
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
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		if err := fn(Object{Key: a.Name, Size: a.Size, Modified: a.Updated}); err != nil {
			return err
		}
	}
}
