package storagesync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrNotFound is returned by Backend.Get for a key that holds no object.
var ErrNotFound = errors.New("object not found")

// Object is one stored object as a listing shows it.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// Backend is an object store: a bucket (S3, GCS) or container (Azure)
// holding objects by key. Keys use "/" as the separator; Delete of a
// missing key succeeds.
type Backend interface {
	// Put stores size bytes read from r under key, replacing any object.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens the object at key (ErrNotFound when there is none).
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the object at key; a missing object is no error.
	Delete(ctx context.Context, key string) error
	// List calls fn for each object whose key starts with prefix, in key
	// order where the store keeps one; an error from fn stops it.
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Kind names the store ("s3", "azure", "gcs").
	Kind() string
}

// Config chooses and configures the backend. Kind "" means no object
// storage. Credentials set here stay in the control plane: they are never
// logged (String hides them), audited or handed to a sandbox.
type Config struct {
	Kind   string // "s3", "azure", "gcs" or ""
	Bucket string // bucket (S3, GCS) or container (Azure)
	Prefix string // key prefix before <account>/<sandbox>/; may be ""
	// Endpoint is the store's address: an S3-compatible server
	// (https://host:port or http:// for a test server), Azure's blob
	// service URL when no connection string gives it, or a GCS emulator.
	Endpoint string
	// CreateBucket creates the bucket or container when it is missing.
	CreateBucket bool

	// S3.
	Region       string
	PathStyle    bool   // path-style addressing (most S3-compatible servers)
	AccessKey    string // "" means the environment's and instance's credentials
	SecretKey    string
	SessionToken string
	SSE          string // "" (the bucket's default), "AES256" or "aws:kms"
	KMSKeyID     string // with SSE "aws:kms"; "" means the account's default key

	// Azure: a connection string, or an account name with its key, or a
	// SAS URL (of the account or the container).
	ConnectionString string
	AccountName      string
	AccountKey       string
	SASURL           string

	// GCS: a service account's JSON key file; "" means application
	// default credentials, or none at all when Endpoint names an emulator.
	CredentialsFile string
}

// String describes the configuration without its credentials.
func (c Config) String() string {
	if c.Kind == "" {
		return "none"
	}
	s := fmt.Sprintf("%s bucket=%s prefix=%q", c.Kind, c.Bucket, c.Prefix)
	if c.Endpoint != "" {
		s += " endpoint=" + redactURL(c.Endpoint)
	}
	return s
}

// redactURL drops a URL's query (a SAS token) and user information.
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexByte(u[i+3:], '@'); j >= 0 {
			u = u[:i+3] + u[i+3+j+1:]
		}
	}
	return u
}

// Open returns the backend c configures, checking that its bucket can be
// reached (and creating it when c.CreateBucket is set). Its errors, and
// the backend's, never carry c's credentials (secrets.go).
func Open(ctx context.Context, c Config) (Backend, error) {
	keys := c.secrets()
	redact := newRedactor(keys)
	b, err := open(ctx, c)
	if err != nil {
		return nil, redactErr(redact, err)
	}
	return &guarded{b: b, redact: redact, keys: keys}, nil
}

func open(ctx context.Context, c Config) (Backend, error) {
	if c.Bucket == "" {
		return nil, errors.New("open object storage: no bucket")
	}
	if strings.Contains(c.Prefix, "..") || strings.HasPrefix(c.Prefix, "/") {
		return nil, fmt.Errorf("open object storage: prefix %q: must not start with / or hold \"..\" components", c.Prefix)
	}
	var (
		b   Backend
		err error
	)
	switch c.Kind {
	case "s3":
		b, err = openS3(ctx, c)
	case "azure":
		b, err = openAzure(ctx, c)
	case "gcs":
		b, err = openGCS(ctx, c)
	default:
		return nil, fmt.Errorf("open object storage: kind %q: want s3, azure or gcs", c.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s storage: %w", c.Kind, err)
	}
	return b, nil
}
