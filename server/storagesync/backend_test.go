package storagesync_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server/storagesync"
	"github.com/google/go-cmp/cmp"
)

// TestBackends runs each backend against its real server on loopback:
// put (a multipart-sized object too), get byte-exact, list by prefix,
// delete, and the not-found cases.
func TestBackends(t *testing.T) {
	for _, kind := range objtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := objtest.Start(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			b, err := storagesync.Open(ctx, srv.Config)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if b.Kind() != kind {
				t.Errorf("kind %q, want %q", b.Kind(), kind)
			}
			big := make([]byte, 20<<20+123)
			if _, err := rand.Read(big); err != nil {
				t.Fatal(err)
			}
			objs := map[string][]byte{
				"p/acct/sb/a.txt":           []byte("hello"),
				"p/acct/sb/dir/b.bin":       big,
				"p/acct/sb/empty":           {},
				"p/acct/sb/sp ace/ü.txt":    []byte("unicode"),
				"p/acct/other/not-mine.txt": []byte("x"),
			}
			for k, v := range objs {
				if err := b.Put(ctx, k, bytes.NewReader(v), int64(len(v))); err != nil {
					t.Fatalf("put %s: %v", k, err)
				}
			}
			for k, v := range objs {
				r, err := b.Get(ctx, k)
				if err != nil {
					t.Fatalf("get %s: %v", k, err)
				}
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(got, v) {
					t.Fatalf("get %s: %d bytes (err %v), want %d byte-exact", k, len(got), err, len(v))
				}
			}
			list := func() map[string]int64 {
				got := map[string]int64{}
				if err := b.List(ctx, "p/acct/sb/", func(o storagesync.Object) error {
					got[o.Key] = o.Size
					return nil
				}); err != nil {
					t.Fatalf("list: %v", err)
				}
				return got
			}
			want := map[string]int64{"p/acct/sb/a.txt": 5, "p/acct/sb/dir/b.bin": int64(len(big)), "p/acct/sb/empty": 0, "p/acct/sb/sp ace/ü.txt": 7}
			if d := cmp.Diff(want, list()); d != "" {
				t.Errorf("list (-want +got):\n%s", d)
			}
			stop := errors.New("stop")
			n := 0
			if err := b.List(ctx, "p/", func(storagesync.Object) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
				t.Errorf("list stopped by fn: %v after %d objects, want stop after 1", err, n)
			}
			if err := b.Delete(ctx, "p/acct/sb/a.txt"); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if err := b.Delete(ctx, "p/acct/sb/a.txt"); err != nil {
				t.Errorf("delete again: %v, want nil", err)
			}
			delete(want, "p/acct/sb/a.txt")
			if d := cmp.Diff(want, list()); d != "" {
				t.Errorf("list after delete (-want +got):\n%s", d)
			}
			if _, err := b.Get(ctx, "p/acct/sb/a.txt"); !errors.Is(err, storagesync.ErrNotFound) {
				t.Errorf("get deleted: %v, want ErrNotFound", err)
			}
			missing := srv.Config
			missing.Bucket += "-missing"
			if _, err := storagesync.Open(ctx, missing); err == nil || !strings.Contains(err.Error(), "does not exist") {
				t.Errorf("open a missing bucket: %v, want does not exist", err)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	for _, c := range []storagesync.Config{
		{Kind: "s3"},
		{Kind: "ftp", Bucket: "b"},
		{Kind: "s3", Bucket: "b", Prefix: "../x"},
		{Kind: "s3", Bucket: "b", Prefix: "/abs"},
		{Kind: "s3", Bucket: "b", Endpoint: "127.0.0.1:9000"},
		{Kind: "s3", Bucket: "b", Endpoint: "http://127.0.0.1:1", SSE: "rot13"},
		{Kind: "azure", Bucket: "b"},
		{Kind: "azure", Bucket: "b", AccountKey: "k"},
	} {
		if _, err := storagesync.Open(context.Background(), c); err == nil {
			t.Errorf("Open(%v): no error", c)
		}
	}
}

func TestConfigStringHidesCredentials(t *testing.T) {
	c := storagesync.Config{
		Kind: "azure", Bucket: "b", Endpoint: "https://user:pw@acct.blob.example/?sv=1&sig=SECRETSIG",
		SecretKey: "SECRETKEY", AccountKey: "SECRETACCOUNTKEY", ConnectionString: "AccountKey=SECRETCONN", SASURL: "https://x/?sig=SECRETSAS",
	}
	s := c.String()
	for _, secret := range []string{"SECRET", "pw@"} {
		if strings.Contains(s, secret) {
			t.Errorf("String() = %q shows %q", s, secret)
		}
	}
}

func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"https://u:p@h/x?sig=1", "http://h", "", "?", "://@", "a://b@c@d?e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		c := storagesync.Config{Kind: "s3", Bucket: "b", Endpoint: u}
		s := c.String()
		if i := strings.IndexByte(u, '?'); i >= 0 && len(u) > i+1 && strings.Contains(s, u[i:]) {
			t.Errorf("String() = %q keeps the query of %q", s, u)
		}
	})
}

// failingReader yields data, then fails with err instead of io.EOF: a
// workspace file whose reading breaks off.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestBackendsKeepWhatAFailedPutReplaces puts an object whose reader
// breaks off, small, mid-sized and past one GCS chunk, over an object
// stored before: the put fails and the store still holds the old object,
// never the half read. GCS's client with a ChunkSize of 0 ended its
// streamed multipart body with the closing boundary after the failure,
// and fake-gcs-server committed the half in about one put of ten.
func TestBackendsKeepWhatAFailedPutReplaces(t *testing.T) {
	for _, kind := range objtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := objtest.Start(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			b, err := storagesync.Open(ctx, srv.Config)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			broken := errors.New("the workspace read broke off")
			for _, tc := range []struct {
				name       string
				size, read int
				tries      int
			}{
				{"small", 28, 10, 40},
				{"mid-sized", 3 << 20, 1 << 20, 4},
				{"past a chunk", 9 << 20, 8<<20 + 5, 1},
			} {
				data := make([]byte, tc.size)
				if _, err := rand.Read(data); err != nil {
					t.Fatal(err)
				}
				old := []byte("stored before " + tc.name)
				for i := range tc.tries {
					key := fmt.Sprintf("p/%s-%d", strings.ReplaceAll(tc.name, " ", "-"), i)
					if err := b.Put(ctx, key, bytes.NewReader(old), int64(len(old))); err != nil {
						t.Fatalf("put %s: %v", key, err)
					}
					err := b.Put(ctx, key, &failingReader{data: data[:tc.read], err: broken}, int64(tc.size))
					if !errors.Is(err, broken) {
						t.Errorf("%s: put with a reader that breaks off: %v, want its error", key, err)
					}
					r, err := b.Get(ctx, key)
					if err != nil {
						t.Fatalf("get %s: %v", key, err)
					}
					got, err := io.ReadAll(r)
					r.Close()
					if err != nil || !bytes.Equal(got, old) {
						t.Fatalf("%s after a failed put holds %d bytes (err %v), want the %d stored before", key, len(got), err, len(old))
					}
				}
			}
		})
	}
}

// pausingReader yields data, and once at bytes are read waits for
// release before it goes on: a large workspace file being read when the
// store stops.
type pausingReader struct {
	data     []byte
	at       int
	reached  chan struct{} // closed when at bytes were read
	released chan struct{}
	once     sync.Once
}

func (r *pausingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.at <= 0 {
		r.once.Do(func() { close(r.reached) })
		<-r.released
	} else if len(p) > r.at {
		p = p[:r.at]
	}
	n := copy(p, r.data)
	r.data, r.at = r.data[n:], r.at-n
	return n, nil
}

// TestBackendsStoreStopsMidUpload stops each real store in the middle of
// a large put, past what S3 sends as its first multipart part, Azure as
// its first blocks and GCS as its first resumable chunks: the put fails,
// the object stored before is still whole there (never the parts sent),
// and the same put delivers once the store is back.
func TestBackendsStoreStopsMidUpload(t *testing.T) {
	for _, kind := range objtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := objtest.Start(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			b, err := storagesync.Open(ctx, srv.Config)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			const key = "p/acct/sb/big.bin"
			old := []byte("the version stored before")
			if err := b.Put(ctx, key, bytes.NewReader(old), int64(len(old))); err != nil {
				t.Fatal(err)
			}
			srv.Settle(t, key) // Azurite: on disk, so that the stop below keeps it
			data := make([]byte, 40<<20)
			if _, err := rand.Read(data); err != nil {
				t.Fatal(err)
			}
			r := &pausingReader{data: data, at: 20 << 20, reached: make(chan struct{}), released: make(chan struct{})}
			done := make(chan error, 1)
			go func() { done <- b.Put(ctx, key, r, int64(len(data))) }()
			select {
			case <-r.reached:
			case err := <-done:
				t.Fatalf("the put ended before it read 20 MiB: %v", err)
			}
			srv.Stop()
			close(r.released)
			if err := <-done; err == nil {
				t.Fatal("the put succeeded with the store stopped halfway")
			}
			srv.Start(t)
			got := objtest.Read(t, b, key)
			if !bytes.Equal(got, old) {
				t.Fatalf("after the failed put the store holds %d bytes, want the %d stored before", len(got), len(old))
			}
			if err := b.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatalf("put again once the store is back: %v", err)
			}
			if got := objtest.Read(t, b, key); !bytes.Equal(got, data) {
				t.Fatalf("after the retry the store holds %d bytes, not the %d put", len(got), len(data))
			}
		})
	}
}
