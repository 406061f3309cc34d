package sidecar

import (
	"fmt"
	"io"
	"net/http"
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
	v, err := h.openView()
	if err != nil {
		return err
	}
	defer v.close()
	t, err := v.resolve(p, false)
	if err != nil {
		return err
	}
	defer t.close()
	if err := t.writable("write to", p); err != nil {
		return err
	}
	n, err := v.writeFile(t, p, r.Body, nil, syncNow)
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
	v, err := h.openView()
	if err != nil {
		return err
	}
	defer v.close()
	t, err := v.resolve(p, false)
	if err != nil {
		return err
	}
	defer t.close()
	if t.isDir() {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path is a directory: %s", p).
			WithHint("download a directory with GET /files/archive")
	}
	f, fi, err := v.openFile(t, p)
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	w.WriteHeader(http.StatusOK)
	// Copy exactly the size announced: a file growing meanwhile must not
	// overrun Content-Length, and one shrinking ends the response short,
	// which the client sees as an error rather than a silently short file.
	// The buffer is a recycled one: io.CopyN made one per download (the
	// file's size up to 32 KiB; issue 27).
	bp := h.readBufs.Get().(*[]byte)
	defer h.readBufs.Put(bp)
	n, err := io.CopyBuffer(w, io.LimitReader(f, fi.Size()), *bp)
	if err == nil && n < fi.Size() {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		h.abortStream(r, "raw download", err)
	}
	return nil
}

// abortStream ends a response whose body already started: an error envelope
// can no longer be sent, so the connection is dropped and the client sees a
// broken transfer instead of a short one.
func (h *Handler) abortStream(r *http.Request, what string, err error) {
	h.log.WarnContext(r.Context(), what+" cut short", "path", r.URL.Query().Get("path"), "err", fmt.Sprint(err))
	panic(http.ErrAbortHandler)
}
