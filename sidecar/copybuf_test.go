package sidecar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/boxkite/boxkite/client/api"
)

// countingWriter records the size of every Write.
type countingWriter struct {
	buf    bytes.Buffer
	writes []int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, len(p))
	return w.buf.Write(p)
}

// TestCopyIntoFillsBeforeWriting checks that writeFile's copy fills its
// buffer from the body before it writes: a body that arrives in pieces
// (a 4 KiB upload comes out of net/http's reader in two) is one write
// when it fits the buffer, and every byte arrives in order.
func TestCopyIntoFillsBeforeWriting(t *testing.T) {
	t.Parallel()
	pool := &sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}
	for _, tc := range []struct {
		name   string
		size   int
		writes []int
	}{
		{"empty", 0, nil},
		{"4KiB", 4 << 10, []int{4 << 10}},
		{"a buffer", readChunk, []int{readChunk}},
		{"100KiB", 100 << 10, []int{readChunk, readChunk, readChunk, 100<<10 - 3*readChunk}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Repeat([]byte("0123456789abcdef"), tc.size/16)
			v := &fsView{bufs: pool}
			var w countingWriter
			// Pieces of at most 1000 bytes, the last with io.EOF, as a
			// network body may come.
			src := iotest.DataErrReader(&pieceReader{r: bytes.NewReader(data), max: 1000})
			n, err := v.copyInto(&w, src)
			if err != nil || n != int64(len(data)) {
				t.Fatalf("copyInto = %d, %v; want %d, nil", n, err, len(data))
			}
			if !bytes.Equal(w.buf.Bytes(), data) {
				t.Error("the bytes written differ from the body")
			}
			if fmt.Sprint(w.writes) != fmt.Sprint(tc.writes) {
				t.Errorf("writes of %v bytes, want %v", w.writes, tc.writes)
			}
		})
	}
}

// pieceReader reads at most max bytes a call.
type pieceReader struct {
	r   io.Reader
	max int
}

func (p *pieceReader) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.max)]) }

// TestCopyIntoBodyCutShort checks that a body that breaks off is an
// error, whatever the error is: io.ErrUnexpectedEOF, which net/http's
// body returns when the client goes before its Content-Length, must not
// read as the end of a whole body (writeFile would rename the temp file
// over the old content).
func TestCopyIntoBodyCutShort(t *testing.T) {
	t.Parallel()
	for _, cut := range []error{io.ErrUnexpectedEOF, errors.New("connection reset")} {
		v := &fsView{}
		var w countingWriter
		src := io.MultiReader(strings.NewReader(strings.Repeat("x", 5000)), iotest.ErrReader(cut))
		n, err := v.copyInto(&w, src)
		if !errors.Is(err, cut) {
			t.Errorf("copyInto of a body cut by %v = %d, %v; want that error", cut, n, err)
		}
		if n != 5000 {
			t.Errorf("copyInto wrote %d bytes before the error, want the 5000 read", n)
		}
	}
}

// TestPutCutShortKeepsOldContent sends a PUT /files/raw whose body ends
// before its Content-Length: the file keeps its old content and no temp
// file is left behind.
func TestPutCutShortKeepsOldContent(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	target := filepath.Join(fs.ws, "keep.txt")
	if err := os.WriteFile(target, []byte("old content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(fs.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /files/raw?path=keep.txt HTTP/1.1\r\nHost: sidecar\r\n%s: %s\r\nContent-Length: 8192\r\n\r\n%s",
		api.HeaderSidecarToken, testToken, strings.Repeat("n", 4096))
	conn.(*net.TCPConn).CloseWrite() // the client goes, half its body sent
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("a PUT cut short was answered 200")
		}
	}
	conn.Close()
	if got, _ := os.ReadFile(target); string(got) != "old content\n" {
		t.Errorf("after a PUT cut short the file holds %d bytes (%.12q...), want its old content", len(got), got)
	}
	// The handler may still be cleaning up after the answer's failure.
	for range 100 {
		ents, _ := filepath.Glob(filepath.Join(fs.ws, ".boxkite-*.tmp"))
		if len(ents) == 0 {
			return
		}
		runtime.Gosched()
	}
	ents, _ := filepath.Glob(filepath.Join(fs.ws, ".boxkite-*.tmp"))
	if len(ents) > 0 {
		t.Errorf("temp files left behind: %v", ents)
	}
}

// TestWriteFileRecyclesItsBuffer checks that a small write does not make
// a 32 KiB copy buffer each time (io.Copy into an *os.File did: most of
// what a 4 KiB PUT allocated in the sidecar, issue 27).
func TestWriteFileRecyclesItsBuffer(t *testing.T) {
	tr := plantTree(t)
	h := New(Options{Workspace: tr.ws, Roots: tr.roots()})
	data := bytes.Repeat([]byte("x"), 4<<10)
	write := func() {
		v, err := h.openView()
		if err != nil {
			t.Fatal(err)
		}
		defer v.close()
		tg, err := v.resolve("file.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		defer tg.close()
		if _, err := v.writeFile(tg, "file.bin", bytes.NewReader(data), nil, syncLater); err != nil {
			t.Fatal(err)
		}
	}
	write()
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		write()
	}
	runtime.ReadMemStats(&after)
	// A collection may empty the pool now and then; one buffer per write
	// would be 32 KiB each.
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 12<<10 {
		t.Errorf("a 4 KiB writeFile allocates %d bytes, want under 12 KiB (no copy buffer of its own)", per)
	}
}

// discardWriter is a ResponseWriter that keeps nothing of the body.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// TestDownloadRecyclesItsBuffer checks that GET /files/raw copies through
// a recycled buffer: io.CopyN made one of the file's size, up to 32 KiB,
// for every download.
func TestDownloadRecyclesItsBuffer(t *testing.T) {
	tr := plantTree(t)
	h := New(Options{Token: testToken, Workspace: tr.ws, Roots: tr.roots()})
	data := bytes.Repeat([]byte("y"), 64<<10)
	if err := os.WriteFile(filepath.Join(tr.ws, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, "/files/raw?path=big.bin", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, testToken)
	get := func() {
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK || w.n != len(data) {
			t.Fatalf("GET /files/raw = %d, %d bytes; want 200, %d", w.code, w.n, len(data))
		}
	}
	get()
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		get()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 16<<10 {
		t.Errorf("a 64 KiB download allocates %d bytes, want under 16 KiB (no copy buffer of its own)", per)
	}
}
