package storagesync_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestSecretsNeverShown makes each backend fail with its credential in
// use, the way an operator's would be: an S3 secret key, an Azure SAS URL
// (its token rides in every request's query), a GCS service account's
// key file. The store is down when the server opens it, then stops in the
// middle of a run. Nothing a user or operator sees carries the secret:
// Open's error (the server's refusal to start, which `boxkite up` shows),
// a forced flush's error, the sync's last_error (GET …/sync, the CLI and
// TUI), a download's and a listing's error, the final flush's audit
// entry, and the server's log.
func TestSecretsNeverShown(t *testing.T) {
	for _, kind := range objtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := objtest.Start(t, kind)
			c, secrets := credentialed(t, srv, false)
			var seen []string // what the server showed, by where
			show := func(where string, err error) {
				if err == nil {
					t.Errorf("%s: no error with the store down", where)
					return
				}
				seen = append(seen, where+": "+err.Error())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()

			srv.Stop()
			_, err := storagesync.Open(ctx, c)
			show("open with the store down", err)
			srv.Start(t)

			b, err := storagesync.Open(ctx, c)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "boxkite.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			logs := &lockedbuf.Buffer{}
			w := workspace{"a.txt": "alpha"}
			s, err := storagesync.New(storagesync.Deps{
				Backend: b, Store: db, Files: w, Now: time.Now, Prefix: "p", FinalTimeout: 30 * time.Second,
				Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				Audit: func(_ context.Context, _ *model.Sandbox, op string, detail map[string]any) error {
					data, err := json.Marshal(detail)
					seen = append(seen, "audit "+op+": "+string(data))
					return err
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			sb := &model.Sandbox{ID: "sb", AccountID: "acct"}
			s.Created(ctx, sb)
			if _, _, err := s.Flush(ctx, sb); err != nil {
				t.Fatalf("flush with the store up: %v", err)
			}

			srv.Stop()
			w["b.txt"] = "beta"
			_, _, err = s.Flush(ctx, sb)
			show("forced flush", err)
			st, err := s.State(ctx, sb.ID)
			if err != nil || st.LastError == "" {
				t.Errorf("sync state: %+v, %v; want last_error", st, err)
			} else {
				seen = append(seen, "last_error: "+st.LastError)
			}
			_, err = s.Open(ctx, sb, "a.txt")
			show("download", err)
			show("listing", s.Stored(ctx, sb, func(string, storagesync.Object) error { return nil }))
			s.Final(ctx, sb, true)
			seen = append(seen, "log: "+logs.String())

			all := strings.Join(seen, "\n")
			for _, secret := range secrets {
				if strings.Contains(all, secret) {
					t.Errorf("the secret %.6q… shows in what the server said:\n%s", secret, all)
				}
			}
			if strings.Contains(all, "sig=") && !strings.Contains(all, "sig=[redacted]") {
				t.Errorf("a SAS signature shows:\n%s", all)
			}
			t.Logf("what the server said, redacted:\n%s", all)
		})
	}
}

// credentialed is srv's Config with the kind of credential an operator
// gives, and that credential's secret parts; on Azure a SAS of the
// account, or of the container when containerSAS.
func credentialed(t *testing.T, srv *objtest.Server, containerSAS bool) (storagesync.Config, []string) {
	t.Helper()
	c := srv.Config
	switch c.Kind {
	case "s3":
		return c, []string{c.SecretKey}
	case "azure":
		// A SAS signed with Azurite's account key, as an operator's
		// --storage-azure-auth sas.
		var endpoint string
		for _, part := range strings.Split(c.ConnectionString, ";") {
			if v, ok := strings.CutPrefix(part, "BlobEndpoint="); ok {
				endpoint = strings.TrimSuffix(v, "/")
			}
		}
		cred, err := service.NewSharedKeyCredential("devstoreaccount1", objtest.AzuriteKey)
		if err != nil {
			t.Fatal(err)
		}
		q, err := sas.AccountSignatureValues{
			Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
			Permissions:   (&sas.AccountPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}).String(),
			ResourceTypes: (&sas.AccountResourceTypes{Container: true, Object: true}).String(),
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		sasURL := endpoint + "?" + q.Encode()
		if containerSAS {
			if q, err = (sas.BlobSignatureValues{
				Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour), ContainerName: c.Bucket,
				Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}).String(),
			}).SignWithSharedKey(cred); err != nil {
				t.Fatal(err)
			}
			sasURL = endpoint + "/" + c.Bucket + "?" + q.Encode()
		}
		return storagesync.Config{Kind: "azure", Bucket: c.Bucket, SASURL: sasURL}, []string{objtest.AzuriteKey, q.Signature(), q.Encode()}
	case "gcs":
		// A service account key file whose token endpoint is on
		// loopback (fake-gcs-server takes any token).
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		const token = "ya29.objtest-access-token-never-shown"
		tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, token)
		}))
		t.Cleanup(tokens.Close)
		file := filepath.Join(t.TempDir(), "sa.json")
		data, err := json.Marshal(map[string]string{
			"type": "service_account", "project_id": "objtest", "private_key_id": "objtest-private-key-id-0123456789",
			"private_key": pemKey, "client_email": "sync@objtest.iam.gserviceaccount.com", "client_id": "1",
			"token_uri": tokens.URL + "/token",
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c.CredentialsFile = file
		secrets := []string{pemKey, "objtest-private-key-id-0123456789", token}
		for line := range strings.SplitSeq(pemKey, "\n") {
			if len(line) > 16 && !strings.HasPrefix(line, "-----") {
				secrets = append(secrets, line)
			}
		}
		return c, secrets
	}
	t.Fatalf("kind %q", c.Kind)
	return c, nil
}

// TestAzureContainerSAS: a SAS of the container alone (not the account),
// which may list and write its blobs but not read the container's
// properties, opens the backend and stores, lists and reads: Open failed
// with 403 AuthorizationPermissionMismatch before.
func TestAzureContainerSAS(t *testing.T) {
	srv := objtest.Start(t, "azure")
	c, _ := credentialed(t, srv, true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := storagesync.Open(ctx, c)
	if err != nil {
		t.Fatalf("open with a container SAS: %v", err)
	}
	if err := b.Put(ctx, "p/a.txt", strings.NewReader("alpha"), 5); err != nil {
		t.Fatal(err)
	}
	if got := objtest.List(t, b, "p/"); got["a.txt"] != 5 {
		t.Errorf("listed %v, want a.txt", got)
	}
	if got := objtest.Read(t, b, "p/a.txt"); string(got) != "alpha" {
		t.Errorf("read %q", got)
	}
	missing := c
	missing.Bucket += "-missing"
	missing.SASURL = strings.Replace(c.SASURL, "/"+c.Bucket+"?", "/"+missing.Bucket+"?", 1)
	if _, err := storagesync.Open(ctx, missing); err == nil {
		t.Error("open of a container that does not exist with a container SAS: no error")
	}
}
