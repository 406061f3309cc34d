package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/internal/secretfile"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/storagesync"
)

// storageOpts configure the workspace sync to object storage
// (docs/storage.md); off unless storage-kind is set.
type storageOpts struct {
	kind, bucket, prefix, endpoint, region string
	pathStyle                              bool
	sse, kmsKeyID                          string
	accessKeyID, secretFile                string
	azureAccount, azureAuth                string
	gcsCredentialsFile                     string
	ignore                                 string
	interval, finalTimeout, retention      time.Duration
	bandwidthMiB                           int64
	journalMaxDirs                         int
}

func storageFlags(fs *flag.FlagSet, o *storageOpts) {
	fs.StringVar(&o.kind, "storage-kind", "", "sync sandboxes' /workspace to object storage: s3, azure or gcs (default none; docs/storage.md)")
	fs.StringVar(&o.bucket, "storage-bucket", "", "object storage: the bucket (S3, GCS) or container (Azure)")
	fs.StringVar(&o.prefix, "storage-prefix", "boxkite", "object storage: key prefix before <account>/<sandbox>/")
	fs.StringVar(&o.endpoint, "storage-endpoint", "", "object storage: the store's `url` (an S3-compatible server, Azure's blob endpoint, a GCS emulator); default the provider's")
	fs.StringVar(&o.region, "storage-region", "", "object storage: S3 region (GCS: the location of a bucket created)")
	fs.BoolVar(&o.pathStyle, "storage-path-style", false, "object storage: S3 path-style addressing (most S3-compatible servers)")
	fs.StringVar(&o.sse, "storage-sse", "", "object storage: S3 server-side encryption, AES256 or aws:kms (default the bucket's)")
	fs.StringVar(&o.kmsKeyID, "storage-kms-key-id", "", "object storage: the KMS key of --storage-sse aws:kms (default the account's)")
	fs.StringVar(&o.accessKeyID, "storage-access-key-id", "", "object storage: S3 access key id (default the environment's and the instance's credentials)")
	fs.StringVar(&o.secretFile, "storage-secret-file", "", "object storage: `file` (mode 0600) holding the S3 secret key, or Azure's connection string, account key or SAS URL (--storage-azure-auth)")
	fs.StringVar(&o.azureAccount, "storage-azure-account", "", "object storage: Azure storage account name (with --storage-azure-auth key)")
	fs.StringVar(&o.azureAuth, "storage-azure-auth", "connection-string", "object storage: what --storage-secret-file holds for Azure: connection-string, key or sas")
	fs.StringVar(&o.gcsCredentialsFile, "storage-gcs-credentials-file", "", "object storage: a GCS service account's JSON key `file` (default application default credentials)")
	fs.StringVar(&o.ignore, "storage-ignore", strings.Join(storagesync.DefaultIgnore, ","), "object storage: directory names never synced, at any depth (comma-separated; \"\" syncs all)")
	fs.DurationVar(&o.interval, "storage-flush-interval", storagesync.DefaultInterval, "object storage: a file is in the bucket within this of being written (writes through the file API are flushed at once)")
	fs.DurationVar(&o.finalTimeout, "storage-final-flush-timeout", storagesync.DefaultFinalTimeout, "object storage: bound of the final flush when a sandbox is destroyed")
	fs.DurationVar(&o.retention, "storage-retention", 0, "object storage: how long a destroyed sandbox's files are kept (0: until DELETE …/storage)")
	fs.Int64Var(&o.bandwidthMiB, "storage-bandwidth-mib", storagesync.DefaultBandwidth>>20, "object storage: upload MiB per second, all sandboxes together")
	fs.IntVar(&o.journalMaxDirs, "storage-journal-max-dirs", storagesync.DefaultJournalMaxDirs, fmt.Sprintf("object storage: directories each sandbox's change journal watches (1 to %d); a larger workspace is walked in full every reconcile", storagesync.MaxJournalMaxDirs))
}

// config opens the backend o configures; a zero config when storage is off.
func (o *storageOpts) config(ctx context.Context) (server.StorageConfig, error) {
	if o.kind == "" {
		return server.StorageConfig{}, nil
	}
	if o.journalMaxDirs < 1 || o.journalMaxDirs > storagesync.MaxJournalMaxDirs {
		return server.StorageConfig{}, usageErrorf("--storage-journal-max-dirs %d: want 1 to %d", o.journalMaxDirs, storagesync.MaxJournalMaxDirs)
	}
	c := storagesync.Config{
		Kind: o.kind, Bucket: o.bucket, Prefix: o.prefix, Endpoint: o.endpoint, Region: o.region, PathStyle: o.pathStyle,
		AccessKey: o.accessKeyID, SSE: o.sse, KMSKeyID: o.kmsKeyID, AccountName: o.azureAccount, CredentialsFile: o.gcsCredentialsFile,
	}
	var secret string
	if o.secretFile != "" {
		v, err := secretfile.Read(o.secretFile)
		if err != nil {
			return server.StorageConfig{}, &usageError{msg: fmt.Sprintf("--storage-secret-file: %v", err), hint: "a secret file must be readable by the server's user only (chmod 600 FILE)"}
		}
		secret = v
	}
	switch o.kind {
	case "s3":
		c.SecretKey = secret
	case "azure":
		switch o.azureAuth {
		case "connection-string":
			c.ConnectionString = secret
		case "key":
			c.AccountKey = secret
		case "sas":
			c.SASURL = secret
		default:
			return server.StorageConfig{}, usageErrorf("--storage-azure-auth %q: want connection-string, key or sas", o.azureAuth)
		}
	}
	b, err := storagesync.Open(ctx, c)
	if err != nil {
		return server.StorageConfig{}, &hintedError{
			err:  fmt.Errorf("%w (%s)", err, c),
			hint: "the server checks the bucket at start: check --storage-endpoint, --storage-bucket and the credentials in --storage-secret-file",
		}
	}
	var ignore []string
	for _, n := range strings.Split(o.ignore, ",") {
		if n = strings.TrimSpace(n); n != "" {
			ignore = append(ignore, n)
		}
	}
	if ignore == nil {
		ignore = []string{}
	}
	return server.StorageConfig{
		Backend: b, Prefix: o.prefix, Ignore: ignore, Interval: o.interval, FinalTimeout: o.finalTimeout,
		Retention: o.retention, Bandwidth: o.bandwidthMiB << 20, Secrets: []string{secret}, JournalMaxDirs: o.journalMaxDirs,
	}, nil
}
