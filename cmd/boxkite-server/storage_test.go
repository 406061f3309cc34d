package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/internal/objtest"
)

// TestStorageFlags: the storage flags (and their config-file keys and
// environment variables) open the backend they name; a missing bucket, an
// unknown kind, a loose secret file or a journal budget out of range is
// refused before the server starts, without the secret in the error.
func TestStorageFlags(t *testing.T) {
	obj := objtest.Start(t, "gcs")
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "server.toml")
	if err := os.WriteFile(cfgFile, []byte("storage_kind = \"gcs\"\nstorage_bucket = \""+obj.Config.Bucket+"\"\nstorage_endpoint = \""+obj.Config.Endpoint+"\"\nstorage_flush_interval = \"10s\"\nstorage_ignore = \".git, node_modules\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BOXKITE_SERVER_STORAGE_JOURNAL_MAX_DIRS": "77"}
	o, err := parseOptions([]string{"--config", cfgFile}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := o.storage.config(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Backend == nil || c.Backend.Kind() != "gcs" || c.Interval.Seconds() != 10 || c.JournalMaxDirs != 77 || strings.Join(c.Ignore, ",") != ".git,node_modules" || c.Prefix != "boxkite" {
		t.Errorf("config %+v", c)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("TOPSECRETKEY"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--storage-kind", "gcs", "--storage-bucket", "missing", "--storage-endpoint", obj.Config.Endpoint},
		{"--storage-kind", "ftp", "--storage-bucket", "b"},
		{"--storage-kind", "s3", "--storage-bucket", "b", "--storage-secret-file", secret},
		{"--storage-kind", "azure", "--storage-bucket", "b", "--storage-azure-auth", "password"},
		{"--storage-kind", "gcs", "--storage-bucket", obj.Config.Bucket, "--storage-endpoint", obj.Config.Endpoint, "--storage-journal-max-dirs", "0"},
		{"--storage-kind", "gcs", "--storage-bucket", obj.Config.Bucket, "--storage-endpoint", obj.Config.Endpoint, "--storage-journal-max-dirs", "65537"},
	} {
		o, err := parseOptions(args, func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		_, err = o.storage.config(context.Background())
		if err == nil || strings.Contains(err.Error(), "TOPSECRETKEY") {
			t.Errorf("%v: %v, want a refusal without the secret", args, err)
		}
	}
}
