package storagesync

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

type routes struct {
	s *Service
	d RouteDeps
}

var errUnavailable = api.Errorf(http.StatusServiceUnavailable, api.CodeStorageUnavailable, "this server has no object storage configured").
	WithHint("the operator sets storage-kind and storage-bucket in the server's configuration (docs/storage.md)")

// load loads the request's sandbox (404 for another account's), then
// refuses when storage is off.
func (h *routes) load(r *http.Request) (*model.Sandbox, error) {
	sb, err := h.d.LoadSandbox(r)
	if err != nil {
		return nil, err
	}
	if h.s == nil {
		return nil, errUnavailable
	}
	return sb, nil
}

// storageFailed is the answer when the backend failed; the cause is
// logged, redacted, never answered.
func (h *routes) storageFailed(r *http.Request, sb *model.Sandbox, err error) error {
	h.s.d.Log.WarnContext(r.Context(), "object storage failed", "sandbox", sb.ID, "err", h.s.redact(err.Error()))
	if errors.Is(err, ErrNoBucket) {
		// Reached, but the bucket is gone: retrying alone will not help.
		return api.Errorf(http.StatusBadGateway, api.CodeStorageFailed, "the object storage's bucket does not exist").
			WithHint("the server's operator must create it again; the sync then stores every file again (GET /v1/sandboxes/{id}/sync shows the sync's last error)")
	}
	return api.Errorf(http.StatusBadGateway, api.CodeStorageFailed, "the object storage could not be reached").
		WithHint("retry later; GET /v1/sandboxes/{id}/sync shows the sync's last error")
}

func (h *routes) status(w http.ResponseWriter, r *http.Request) error {
	sb, err := h.load(r)
	if err != nil {
		return err
	}
	st, err := h.s.State(r.Context(), sb.ID)
	if err != nil {
		return h.noSync(sb, err)
	}
	httpx.WriteJSON(w, http.StatusOK, h.s.status(st))
	return nil
}

func (h *routes) noSync(sb *model.Sandbox, err error) error {
	if errors.Is(err, ErrNoSync) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "sandbox %s has no synced files", sb.ID).
			WithHint("sandboxes created before object storage was configured are not synced")
	}
	return err
}

func (h *routes) flush(w http.ResponseWriter, r *http.Request) error {
	sb, err := h.load(r)
	if err != nil {
		return err
	}
	if !sb.Active() {
		return api.Errorf(http.StatusConflict, api.CodeConflict, "sandbox %s is not running", sb.ID).
			WithHint("a destroyed sandbox had its final flush; list its files with GET …/storage/files")
	}
	ctx, cancel := context.WithTimeout(r.Context(), flushTimeout)
	defer cancel()
	st, _, err := h.s.Flush(ctx, sb)
	if err != nil {
		if st == nil {
			return h.noSync(sb, err)
		}
		if ae, ok := errors.AsType[*api.Error](err); ok && ae.Code == api.CodeNotSupported {
			return ae // the sandbox's sidecar cannot be read for the sync: not the store's fault
		}
		return h.storageFailed(r, sb, err)
	}
	httpx.WriteJSON(w, http.StatusOK, h.s.status(st))
	return nil
}

func (h *routes) files(w http.ResponseWriter, r *http.Request) error {
	sb, err := h.load(r)
	if err != nil {
		return err
	}
	out := api.StoredFiles{SessionID: sb.ID, Files: []api.StoredFile{}}
	err = h.s.Stored(r.Context(), sb, func(p string, o Object) error {
		out.Files = append(out.Files, api.StoredFile{Path: p, Size: o.Size, ModifiedAt: o.Modified.UTC()})
		return nil
	})
	if err != nil {
		return h.storageFailed(r, sb, err)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *routes) download(w http.ResponseWriter, r *http.Request) error {
	sb, err := h.load(r)
	if err != nil {
		return err
	}
	rel, ok := StoredPath(r.URL.Query().Get("path"))
	if !ok {
		return httpx.InvalidQuery("path", "path must name a file under /workspace", "give the path as `ls --from-storage` lists it, e.g. src/main.py")
	}
	rc, err := h.s.Open(r.Context(), sb, rel)
	if errors.Is(err, ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "%s is not in the sandbox's stored files", rel).
			WithHint("list them with `boxkite files ls --from-storage`")
	}
	if err != nil {
		return h.storageFailed(r, sb, err)
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	_, err = io.Copy(w, rc)
	if err != nil {
		h.s.d.Log.WarnContext(r.Context(), "stored file download cut short", "sandbox", sb.ID, "err", h.s.redact(err.Error()))
		panic(http.ErrAbortHandler) // the client sees a broken transfer, not a short file
	}
	return nil
}

func (h *routes) delete(w http.ResponseWriter, r *http.Request) error {
	sb, err := h.load(r)
	if err != nil {
		return err
	}
	if err := h.s.DeleteStored(r.Context(), sb); err != nil {
		if errors.Is(err, ErrNoSync) {
			return h.noSync(sb, err)
		}
		return h.storageFailed(r, sb, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// StoredPath turns a requested path (relative to /workspace, or absolute
// under it) into the clean relative path of a stored file; false for one
// that is empty, leaves the workspace or has a "." or ".." component.
func StoredPath(p string) (string, bool) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	if strings.HasPrefix(p, "/") {
		rel, ok := strings.CutPrefix(p, Root+"/")
		if !ok {
			return "", false
		}
		p = rel
	}
	if p == "" || path.Clean(p) != p {
		return "", false
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == "." || c == ".." || c == "" {
			return "", false
		}
	}
	return p, true
}

// status is st in its wire form.
func (s *Service) status(st *State) api.SyncStatus {
	out := api.SyncStatus{
		SessionID: st.SandboxID, Backend: s.Kind(), State: st.State, Pending: st.Pending,
		LastError: st.LastError, Attempts: st.Attempts, FlushInterval: s.d.Interval.Seconds(),
		FinalFlushDone: st.FinalDone,
	}
	if st.State == StateSyncing {
		out.Journal = s.journalStatus(st.SandboxID)
	}
	tp := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		u := t.UTC()
		return &u
	}
	out.LastFlushAt, out.LastErrorAt, out.RetainUntil = tp(st.LastFlushAt), tp(st.LastErrorAt), tp(st.RetainUntil)
	if st.Attempts > 0 {
		out.NextAttemptAt = tp(st.NextAttemptAt)
	}
	if files, err := s.d.Store.SyncedFiles(context.Background(), st.SandboxID); err == nil {
		out.SyncedFiles = len(files)
		for _, f := range files {
			out.SyncedBytes += f.Size
		}
	}
	return out
}
