package storagesync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// azureBackend is an Azure Blob Storage container, through the official SDK.
type azureBackend struct {
	cl     *container.Client
	name   string // the container
	create bool   // Config.CreateBucket
}

func openAzure(ctx context.Context, c Config) (Backend, error) {
	var (
		cl  *container.Client
		err error
	)
	switch {
	case c.ConnectionString != "":
		cl, err = container.NewClientFromConnectionString(c.ConnectionString, c.Bucket, nil)
	case c.AccountKey != "":
		if c.AccountName == "" {
			return nil, errors.New("an account key needs the account name")
		}
		var cred *azblob.SharedKeyCredential
		if cred, err = azblob.NewSharedKeyCredential(c.AccountName, c.AccountKey); err == nil {
			cl, err = container.NewClientWithSharedKeyCredential(containerURL(c), cred, nil)
		}
	case c.SASURL != "":
		u := c.SASURL
		if base, q, ok := strings.Cut(u, "?"); ok && !strings.HasSuffix(strings.TrimSuffix(base, "/"), "/"+c.Bucket) {
			// An account SAS: name the container before the token.
			u = strings.TrimSuffix(base, "/") + "/" + c.Bucket + "?" + q
		}
		cl, err = container.NewClientWithNoCredential(u, nil)
	default:
		return nil, errors.New("give a connection string, an account key or a SAS URL")
	}
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	b := &azureBackend{cl: cl, name: c.Bucket, create: c.CreateBucket}
	if _, err := b.ensureBucket(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *azureBackend) createsBucket() bool { return b.create }

// ensureBucket checks the container and makes it when it is missing and
// b.create is set; it reports whether it made it.
func (b *azureBackend) ensureBucket(ctx context.Context) (bool, error) {
	_, err := b.cl.GetProperties(ctx, nil)
	if err == nil {
		return false, nil
	}
	if bloberror.HasCode(err, bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationResourceTypeMismatch) {
		// A SAS of the container itself may list its blobs but not read
		// its properties: a listing of one blob checks it as well.
		pager := b.cl.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{MaxResults: to.Ptr[int32](1)})
		if _, err = pager.NextPage(ctx); err == nil {
			return false, nil
		}
	}
	if !bloberror.HasCode(err, bloberror.ContainerNotFound) {
		return false, fmt.Errorf("check container %s: %w", b.name, terseAzure(err))
	}
	if !b.create {
		return false, fmt.Errorf("container %s does not exist", b.name)
	}
	if _, err := b.cl.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return false, fmt.Errorf("create container %s: %w", b.name, terseAzure(err))
	}
	return true, nil
}

// terse is terseAzure(err), or when err says the container is missing a
// noBucketError.
func (b *azureBackend) terse(err error) error {
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		return &noBucketError{bucket: b.name, err: terseAzure(err)}
	}
	return terseAzure(err)
}

// containerURL is the container's URL under the account's blob endpoint.
func containerURL(c Config) string {
	base := c.Endpoint
	if base == "" {
		base = "https://" + c.AccountName + ".blob.core.windows.net"
	}
	return strings.TrimSuffix(base, "/") + "/" + c.Bucket
}

func (b *azureBackend) Kind() string { return "azure" }

func (b *azureBackend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	bb := b.cl.NewBlockBlobClient(key)
	var err error
	if rs, ok := r.(io.ReadSeeker); ok && size >= 0 && size <= 8<<20 {
		_, err = bb.Upload(ctx, streaming.NopCloser(rs), nil) // one Put Blob request
	} else {
		_, err = bb.UploadStream(ctx, r, &azblob.UploadStreamOptions{BlockSize: 8 << 20, Concurrency: 2})
	}
	if err != nil {
		return fmt.Errorf("put %s: %w", key, b.terse(err))
	}
	return nil
}

func (b *azureBackend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	resp, err := b.cl.NewBlobClient(key).DownloadStream(ctx, nil)
	if err != nil {
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("get %s: %w", key, b.terse(err))
	}
	return resp.Body, nil
}

func (b *azureBackend) Delete(ctx context.Context, key string) error {
	_, err := b.cl.NewBlobClient(key).Delete(ctx, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return fmt.Errorf("delete %s: %w", key, b.terse(err))
	}
	return nil
}

func (b *azureBackend) List(ctx context.Context, prefix string, fn func(Object) error) error {
	pager := b.cl.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(prefix)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, b.terse(err))
		}
		for _, it := range page.Segment.BlobItems {
			o := Object{Key: *it.Name}
			if p := it.Properties; p != nil {
				if p.ContentLength != nil {
					o.Size = *p.ContentLength
				}
				if p.LastModified != nil {
					o.Modified = *p.LastModified
				}
			}
			if err := fn(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// terseError is an SDK error told by a short message: Azure's
// ResponseError prints the whole response, a ruled block with the XML
// body, which `boxkite up` showed as the reason the server did not start
// and GET …/sync as last_error.
type terseError struct {
	msg string
	err error
}

func (e *terseError) Error() string { return e.msg }
func (e *terseError) Unwrap() error { return e.err }

// terseAzure tells an answer of the store by its status and error code.
func terseAzure(err error) error {
	if re, ok := errors.AsType[*azcore.ResponseError](err); ok {
		return &terseError{msg: fmt.Sprintf("the store answered %d %s", re.StatusCode, re.ErrorCode), err: err}
	}
	return err
}
