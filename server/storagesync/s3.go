package storagesync

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
)

// s3Backend is S3 or an S3-compatible store, through minio-go.
type s3Backend struct {
	cl     *minio.Client
	bucket string
	region string
	create bool // Config.CreateBucket
	sse    encrypt.ServerSide
}

func openS3(ctx context.Context, c Config) (Backend, error) {
	host, secure := "s3.amazonaws.com", true
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("endpoint %q: want http(s)://host[:port]", redactURL(c.Endpoint))
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	var creds *credentials.Credentials
	if c.AccessKey != "" {
		creds = credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken)
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if c.PathStyle {
		lookup = minio.BucketLookupPath
	}
	cl, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: c.Region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	b := &s3Backend{cl: cl, bucket: c.Bucket, region: c.Region, create: c.CreateBucket}
	switch c.SSE {
	case "":
	case "AES256":
		b.sse = encrypt.NewSSE()
	case "aws:kms":
		if b.sse, err = encrypt.NewSSEKMS(c.KMSKeyID, nil); err != nil {
			return nil, fmt.Errorf("sse-kms: %w", err)
		}
	default:
		return nil, fmt.Errorf("sse %q: want AES256 or aws:kms", c.SSE)
	}
	if _, err := b.ensureBucket(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *s3Backend) createsBucket() bool { return b.create }

// ensureBucket checks the bucket and makes it when it is missing and
// b.create is set; it reports whether it made it.
func (b *s3Backend) ensureBucket(ctx context.Context) (bool, error) {
	ok, err := b.cl.BucketExists(ctx, b.bucket)
	if err != nil {
		return false, fmt.Errorf("check bucket %s: %w", b.bucket, err)
	}
	if ok {
		return false, nil
	}
	if !b.create {
		return false, fmt.Errorf("bucket %s does not exist", b.bucket)
	}
	if err := b.cl.MakeBucket(ctx, b.bucket, minio.MakeBucketOptions{Region: b.region}); err != nil {
		return false, fmt.Errorf("create bucket %s: %w", b.bucket, err)
	}
	return true, nil
}

// noBucket is err, or when it says the bucket is missing a noBucketError.
func (b *s3Backend) noBucket(err error) error {
	if minio.ToErrorResponse(err).Code == "NoSuchBucket" {
		return &noBucketError{bucket: b.bucket, err: err}
	}
	return err
}

func (b *s3Backend) Kind() string { return "s3" }

func (b *s3Backend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	_, err := b.cl.PutObject(ctx, b.bucket, key, r, size, minio.PutObjectOptions{
		ServerSideEncryption: b.sse, ContentType: "application/octet-stream",
		PartSize: 16 << 20,
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, b.noBucket(err))
	}
	return nil
}

func (b *s3Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	// Stat first: GetObject's errors surface only on the first read.
	if _, err := b.cl.StatObject(ctx, b.bucket, key, minio.StatObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).StatusCode == 404 {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	o, err := b.cl.GetObject(ctx, b.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return o, nil
}

func (b *s3Backend) Delete(ctx context.Context, key string) error {
	err := b.cl.RemoveObject(ctx, b.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).StatusCode != 404 {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

func (b *s3Backend) List(parent context.Context, prefix string, fn func(Object) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	for o := range b.cl.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("list %s: %w", prefix, b.noBucket(o.Err))
		}
		if err := fn(Object{Key: o.Key, Size: o.Size, Modified: o.LastModified}); err != nil {
			return err
		}
	}
	return parent.Err()
}
