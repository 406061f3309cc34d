package envd

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/iocount"
)

// download serves GET /files?path=: the file's bytes, streamed from the
// sidecar's /files/raw.
func (h *Handler) download(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := absPath(r.URL.Query().Get("path"))
	if err := rawPath(p); err != nil {
		h.restError(w, r, err)
		return
	}
	sess := sessionFrom(ctx)
	started := time.Now()
	resp, err := sidecarOK(ctx, sess, http.MethodGet, "/files/raw", url.Values{"path": {inSandbox(p)}}, nil, nil)
	if err != nil {
		h.restError(w, r, askedError(err, p))
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	if cl := resp.Header.Get("Content-Length"); cl != "" {
		w.Header().Set("Content-Length", cl)
	}
	w.WriteHeader(http.StatusOK)
	n, err := io.Copy(w, resp.Body)
	code := 0
	if err != nil {
		code = 1
	}
	_ = sess.Audit(ctx, AuditEntry{
		Operation: "file_download", Detail: map[string]any{"path": p, "bytes": n, "interface": "e2b"},
		ExitCode: &code, Started: started, Duration: time.Since(started),
	})
	if err != nil {
		panic(http.ErrAbortHandler) // the client must see a broken transfer, not a short file
	}
}

// rawPath refuses a path with a backslash in it. Reads and writes go
// through the sidecar's file routes, which take a backslash for a slash,
// as /v1 does: write('a\b.txt') wrote a/b.txt while its answer named
// a\b.txt, and read('a\b.txt') read a/b.txt. E2B, as Linux, takes a
// backslash as a character of the name, and so do the other file calls
// here (list, getInfo, rename, remove), which run commands.
func rawPath(p string) error {
	if strings.ContainsRune(p, '\\') {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest,
			"path '%s' has a backslash, which boxkite's file reads and writes take for a slash", p).
			WithHint("name the file without a backslash, or read and write it with commands.run")
	}
	return nil
}

// writtenEntry is one element of the upload's answer.
type writtenEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// upload serves POST /files: a multipart body with one part per file, each
// named by ?path= (a single-file write) or else by its whole filename,
// or a raw body for ?path= (gzip when Content-Encoding says so). Each file
// is streamed to the sidecar's /files/raw, which creates parent
// directories and replaces files atomically.
func (h *Handler) upload(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query().Get("path")
	var written []writtenEntry
	write := func(dest string, body io.Reader) error {
		p := absPath(dest)
		if err := rawPath(p); err != nil {
			return err
		}
		if err := h.putFile(r.Context(), p, body); err != nil {
			return askedError(err, p)
		}
		written = append(written, writtenEntry{Name: path.Base(p), Type: "file", Path: p})
		return nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var err error
	if mt == "multipart/form-data" {
		err = h.uploadParts(r, query, write)
	} else {
		err = h.uploadRaw(r, query, write)
	}
	if err != nil {
		h.restError(w, r, err)
		return
	}
	if len(written) == 0 {
		h.restError(w, r, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "the upload holds no file"))
		return
	}
	writeJSON(w, http.StatusOK, written)
}

func (h *Handler) uploadParts(r *http.Request, query string, write func(string, io.Reader) error) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "read multipart body: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "read multipart body: %v", err)
		}
		dest := query
		if dest == "" {
			dest = partPath(part)
		}
		if dest == "" {
			part.Close()
			return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "a part of the upload names no file: give each a filename, or ?path=")
		}
		err = write(dest, part)
		part.Close()
		if err != nil {
			return err
		}
	}
}

// partPath is the destination a part names: its filename parameter as sent.
// Not part.FileName, which keeps only the last element (a browser's file
// name must not pick a directory), while the SDK's write([...]) sends the
// whole destination path there and no ?path=.
func partPath(part *multipart.Part) string {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}

func (h *Handler) uploadRaw(r *http.Request, query string, write func(string, io.Reader) error) error {
	if query == "" {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "query parameter path is required for a raw upload")
	}
	var body io.Reader = r.Body
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "read gzip body: %v", err)
		}
		defer zr.Close()
		body = zr
	default:
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Content-Encoding %q is not supported", r.Header.Get("Content-Encoding"))
	}
	return write(query, body)
}

// putFile streams body into the sandbox file p and audits it.
func (h *Handler) putFile(ctx context.Context, p string, body io.Reader) error {
	sess := sessionFrom(ctx)
	started := time.Now()
	cr := &iocount.Reader{R: body}
	resp, err := sidecarOK(ctx, sess, http.MethodPut, "/files/raw", url.Values{"path": {inSandbox(p)}}, cr,
		http.Header{"Content-Type": {"application/octet-stream"}})
	if err != nil {
		return err
	}
	resp.Body.Close()
	code := 0
	return sess.Audit(ctx, AuditEntry{
		Operation: "file_upload", Detail: map[string]any{"path": p, "bytes": cr.N, "interface": "e2b"},
		ExitCode: &code, Started: started, Duration: time.Since(started),
	})
}

// restError answers an envd REST route in the shape the SDK reads:
// {"code": <status>, "message": …}; a status it maps to an error class
// (400, 401, 404, 429, 502, 507) keeps that meaning.
func (h *Handler) restError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrGone) {
		writeGone(w, r.Header.Get(HeaderSandboxID), "")
		return
	}
	e, ok := errors.AsType[*api.Error](err)
	if !ok {
		h.log.ErrorContext(r.Context(), "envd request failed", "path", r.URL.Path, "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"code": http.StatusInternalServerError, "message": "internal error"})
		return
	}
	status := e.Status
	if status == 0 {
		status = api.StatusOf(e.Code)
	}
	switch {
	case e.Code == api.CodeSandboxLost:
		status = http.StatusBadGateway
	case status == http.StatusUnprocessableEntity || status == http.StatusForbidden && e.Code == api.CodeForbidden:
		status = http.StatusBadRequest
	}
	writeJSON(w, status, map[string]any{"code": status, "message": Message(e)})
}
