package sidecar

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
)

// queryPath returns the required ?path= of a transfer route.
func queryPath(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", apihttp.PathRequired()
	}
	return p, nil
}

// uploadPath is queryPath for a route that writes: the path must be
// UTF-8, as the answer names it in JSON, which would alter it.
func uploadPath(r *http.Request) (string, error) {
	p, err := queryPath(r)
	if err == nil && !utf8.ValidString(p) {
		err = api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path %q: not valid UTF-8", p).
			WithHint("name the file with UTF-8 text, percent-encoded in ?path=")
	}
	return p, err
}

// putRaw streams the request body into a file: written to a temp file next
// to it and renamed over it, so readers never see half a file. The size is
// bounded by the disk only. A new file gets mode 0644; an existing one keeps
// its mode and owner.
func (h *Handler) putRaw(w http.ResponseWriter, r *http.Request) error {
	p, err := uploadPath(r)
	if err != nil {
		return err
	}
	v, t, done, err := h.openTarget(p, false)
	if err != nil {
		return err
	}
	defer done()
	if err := t.writable("write to", p); err != nil {
		return err
	}
	if err := fileName(t, p); err != nil {
		return err
	}
	n, err := v.writeFile(t, p, r.Body, nil, durabilityOf(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.FileWriteResult{Path: t.virt(), Size: n})
}

// getRaw streams a file as it is on disk.
func (h *Handler) getRaw(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	v, t, done, err := h.openTarget(p, false)
	if err != nil {
		return err
	}
	defer done()
	if t.isDir() {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path is a directory: %s", p).
			WithHint("copy a directory with -r: 'boxkite files cp -r ID:PATH DST'")
	}
	f, _, err := v.openFile(t, p)
	if err != nil {
		return err
	}
	defer f.Close()
	// The buffer is a recycled one: io.CopyN made one per download (the
	// file's size up to 32 KiB; issue 27).
	bp := h.readBufs.Get().(*[]byte)
	defer h.readBufs.Put(bp)
	buf := *bp
	w.Header().Set("Content-Type", "application/octet-stream")
	// The answer's length is what headRead gives: a small file comes back
	// as one read saw it (TestE2BPause reads a counter a loop rewrites;
	// announcing the open's size and then reading fewer bytes dropped the
	// connection, which the control plane reports as a sidecar it cannot
	// reach).
	n, size, err := headRead(f, buf)
	if err != nil {
		return fileError(err, "read", p)
	}
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	err = sendSized(w, f, buf, n, size)
	if err != nil {
		h.abortStream(r, "raw download", err)
	}
	return nil
}

// headRead starts a read whose length is announced before its bytes (a
// download's Content-Length, a tar entry's size). It reads f into buf. A
// file that fits is read whole, and its size is what the read gave: a file
// rewritten meanwhile (truncated, then written, as `echo $i > n` does) is
// given as that read saw it, as cat would give it. A larger file's size is
// its size after the first read, and never less than what was read.
func headRead(f *os.File, buf []byte) (n int, size int64, err error) {
	n, err = io.ReadFull(f, buf)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return n, int64(n), nil
	case err != nil:
		return 0, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("stat file: %w", err)
	}
	return n, max(fi.Size(), int64(n)), nil
}

// sendSized writes the size bytes headRead announced: the n in buf, then
// the rest from f. It copies exactly size, so a file growing meanwhile does
// not overrun what was announced; one shrinking below it is an error
// (io.ErrUnexpectedEOF) the caller reports by cutting its stream, which the
// client sees as a broken transfer rather than a silently short file.
func sendSized(w io.Writer, f *os.File, buf []byte, n int, size int64) error {
	sent, err := w.Write(buf[:n])
	if err == nil && int64(sent) < size {
		var rest int64
		rest, err = io.CopyBuffer(w, io.LimitReader(f, size-int64(n)), buf)
		sent += int(rest)
	}
	if err == nil && int64(sent) < size {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// abortStream ends a response whose body already started: an error envelope
// can no longer be sent, so the connection is dropped and the client sees a
// broken transfer instead of a short one.
func (h *Handler) abortStream(r *http.Request, what string, err error) {
	h.log.WarnContext(r.Context(), what+" cut short", "path", r.URL.Query().Get("path"), "err", fmt.Sprint(err))
	panic(http.ErrAbortHandler)
}
