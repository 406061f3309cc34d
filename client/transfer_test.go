package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestUploadStreams proves uploads are not buffered: the server answers
// after reading the first chunk while the client's body has not ended yet,
// which would deadlock if anything read the body whole before sending.
func TestUploadStreams(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		route string
		call  func(c *client.Client, r io.Reader) (any, error)
		reply string
		want  any
	}{
		{
			name:  "file",
			route: "PUT /v1/sandboxes/sb/files/raw?path=%2Fworkspace%2Fbig.bin",
			call: func(c *client.Client, r io.Reader) (any, error) {
				return c.UploadFile(context.Background(), "sb", "/workspace/big.bin", r)
			},
			reply: `{"path":"/workspace/big.bin","size":10}`,
			want:  &api.FileWriteResult{Path: "/workspace/big.bin", Size: 10},
		},
		{
			name:  "archive",
			route: "POST /v1/sandboxes/sb/files/archive?path=out",
			call: func(c *client.Client, r io.Reader) (any, error) {
				return c.UploadArchive(context.Background(), "sb", "out", r)
			},
			reply: `{"files":3,"bytes":10}`,
			want:  &api.ArchiveResult{Files: 3, Bytes: 10},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			firstChunk := make(chan struct{})
			var route string
			var body []byte
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				route = r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery
				buf := make([]byte, 5)
				if _, err := io.ReadFull(r.Body, buf); err != nil {
					t.Errorf("read first chunk: %v", err)
				}
				close(firstChunk)
				rest, _ := io.ReadAll(r.Body)
				body = append(buf, rest...)
				if ct := r.Header.Get("Content-Type"); ct != "application/octet-stream" {
					t.Errorf("Content-Type = %q", ct)
				}
				io.WriteString(w, tt.reply)
			})
			pr, pw := io.Pipe()
			go func() {
				pw.Write([]byte("01234"))
				select {
				case <-firstChunk:
				case <-time.After(10 * time.Second):
					pw.CloseWithError(errors.New("the server never saw the first chunk: the body was buffered"))
					return
				}
				pw.Write([]byte("56789"))
				pw.Close()
			}()
			res, err := tt.call(c, pr)
			if err != nil {
				t.Fatalf("upload: %v", err)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if route != tt.route {
				t.Errorf("route = %s, want %s", route, tt.route)
			}
			if string(body) != "0123456789" {
				t.Errorf("server got %q", body)
			}
		})
	}
}

// TestUploadDoesNotCloseReader: the caller's reader is the caller's.
func TestUploadDoesNotCloseReader(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"path":"/workspace/a","size":1}`)
	})
	r := &closeRecorder{Reader: strings.NewReader("x")}
	if _, err := c.UploadFile(context.Background(), "sb", "a", r); err != nil {
		t.Fatal(err)
	}
	if r.closed {
		t.Error("UploadFile closed the caller's reader")
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestDownloadStreams proves downloads are not buffered: the first bytes
// reach the caller while the server is still sending.
func TestDownloadStreams(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/sandboxes/sb/files/archive" || r.URL.Query().Get("path") != "/workspace/d" {
			t.Errorf("request %s", r.URL)
		}
		w.Header().Set("Content-Type", "application/x-tar")
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "-second")
	})
	d, err := c.DownloadArchive(context.Background(), "sb", "/workspace/d")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Size != -1 {
		t.Errorf("Size = %d, want -1 (unknown)", d.Size)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(d, buf); err != nil || string(buf) != "first" {
		t.Fatalf("first read = %q, %v", buf, err)
	}
	close(release)
	rest, err := io.ReadAll(d)
	if err != nil || string(rest) != "-second" {
		t.Errorf("rest = %q, %v", rest, err)
	}
}

func TestDownloadFile(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1000)
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("path") {
		case "a.bin":
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.Write(data)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"not_found","message":"File not found: b"}}`)
		}
	})
	d, err := c.DownloadFile(context.Background(), "sb", "a.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(d)
	d.Close()
	if err != nil || !bytes.Equal(got, data) || d.Size != int64(len(data)) {
		t.Errorf("DownloadFile: %d bytes (size %d), %v; want %d bytes", len(got), d.Size, err, len(data))
	}
	_, err = c.DownloadFile(context.Background(), "sb", "b")
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != api.CodeNotFound || e.Message != "File not found: b" {
		t.Errorf("DownloadFile(missing) error = %v, want not_found", err)
	}
}
