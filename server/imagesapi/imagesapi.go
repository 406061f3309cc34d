package imagesapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// maxImageArchive bounds POST /v1/images/import; the archive is streamed
// to disk, never held in memory.
const maxImageArchive = 8 << 30

// Store keeps sandbox images (server/images implements it). Its errors
// are *api.Error values where the client should see them; an image the
// account does not have is not_found "image not found", which the
// handlers answer naming the id asked for (named).
type Store interface {
	Import(ctx context.Context, account, label string, body io.Reader) (api.Image, error)
	// Build queues a declarative build; an identical spec of the account
	// returns its existing image with created false. audit appends an
	// entry about the build (egress decisions, its outcome) to the
	// account's audit log, under the image's id.
	Build(ctx context.Context, account, label string, spec api.ImageSpec, audit func(imageID, operation string, detail map[string]any)) (img api.Image, created bool, err error)
	// Logs writes the build log to w, following it until the build ends
	// when follow is set.
	Logs(ctx context.Context, account, id string, w io.Writer, follow bool, flush func()) error
	List(ctx context.Context, account string) ([]api.Image, error)
	Get(ctx context.Context, account, id string) (api.Image, error)
	// Delete refuses an image a sandbox uses; inUse says whether a
	// sandbox recorded with Use is still alive.
	Delete(ctx context.Context, account, id string, inUse func(sandbox string) bool) error
	// RootFS is the host path of a completed image's root filesystem.
	RootFS(ctx context.Context, account, id string) (string, error)
	// Use records that sandbox boots from image id.
	Use(ctx context.Context, id, sandbox string) error
}

func (s *Service) imageStore() (Store, error) {
	if s.d.Images == nil {
		return nil, errNoImages()
	}
	return s.d.Images, nil
}

// errNoImages answers every images route of a server that keeps no
// images (the kube driver's).
func errNoImages() *api.Error {
	return api.Errorf(http.StatusUnprocessableEntity, api.CodeNotSupported, "this server keeps no images: its driver neither builds nor imports them").
		WithHint(noImagesHint)
}

const noImagesHint = "images need the local driver; on Kubernetes, build FROM the sandbox image with what sandboxes need " +
	"and set it as the server's sandbox-image (docs/kubernetes.md)"

// importImage serves POST /v1/images/import: the body is an OCI layout tar
// or a docker save archive; ?label= names the image.
func (s *Service) importImage(w http.ResponseWriter, r *http.Request) error {
	st, err := s.imageStore()
	if err != nil {
		return err
	}
	label := r.URL.Query().Get("label")
	if len(label) > model.MaxLabelLen {
		return httpx.InvalidQuery("label", "label is too long", "")
	}
	if msg := api.LabelProblem(label); msg != "" {
		return httpx.InvalidQuery("label", msg, api.LabelHint)
	}
	if r.ContentLength > maxImageArchive { // refused before a byte is stored
		return archiveTooBig()
	}
	img, err := st.Import(r.Context(), authz.Account(r.Context()).ID, label, http.MaxBytesReader(w, r.Body, maxImageArchive))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return archiveTooBig()
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusAccepted, img)
	return nil
}

// archiveTooBig refuses an import's archive past maxImageArchive, which
// was an internal error once read that far.
func archiveTooBig() error {
	return api.Errorf(http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge, "the image archive is larger than %d GiB", maxImageArchive>>30).
		WithHint("import a smaller image: `docker save` one with fewer or smaller layers")
}

// buildImage serves POST /v1/images: 202 with a queued build, or 200 with
// the account's image of an identical spec.
func (s *Service) buildImage(w http.ResponseWriter, r *http.Request) error {
	st, err := s.imageStore()
	if err != nil {
		return err
	}
	var req api.CreateImageRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	if len(req.Label) > model.MaxLabelLen {
		return httpx.Invalid("label", "label is too long", "")
	}
	if err := api.CheckLabel(req.Label); err != nil {
		return err
	}
	// A build's egress and outcome are audited: none starts while the
	// audit log cannot be written.
	if err := s.d.Audit.Open(); err != nil {
		return err
	}
	account := authz.Account(r.Context()).ID
	record := func(imageID, operation string, detail map[string]any) {
		_ = s.d.Audit.Append(context.Background(), audit.Record{ // a failure waits in the audit gate
			Sandbox: &model.Sandbox{ID: imageID, AccountID: account}, Source: api.LogSourceImageBuild,
			Operation: operation, Detail: detail, Started: s.d.Now(),
		})
	}
	img, created, err := st.Build(r.Context(), account, req.Label, req.ImageSpec, record)
	if err != nil {
		return err
	}
	status := http.StatusAccepted
	if !created {
		status = http.StatusOK
	}
	httpx.WriteJSON(w, status, img)
	return nil
}

// imageLogs serves GET /v1/images/{id}/logs as text; ?follow=1 streams
// until the build ends.
func (s *Service) imageLogs(w http.ResponseWriter, r *http.Request) error {
	st, err := s.imageStore()
	if err != nil {
		return err
	}
	follow := r.URL.Query().Get("follow")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	flush := func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
	}
	id := r.PathValue("id")
	return named(st.Logs(r.Context(), authz.Account(r.Context()).ID, id, w, follow == "1" || follow == "true", flush), id)
}

// named is err of a call about image id, its not-found naming id as a
// volume's or a snapshot's does: the store's (and errNotFound's) "image
// not found" said which of a script's images was missing nowhere.
func named(err error, id string) error {
	if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeNotFound && e.Message == errNotFound.Message {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "image %s not found", id).
			WithHint("list your images with `boxkite images ls`")
	}
	return err
}

// listImages serves GET /v1/images: the account's images, newest first;
// all of them, or with limit and cursor one page and a Link rel="next"
// header, as GET /v1/sandboxes.
func (s *Service) listImages(w http.ResponseWriter, r *http.Request) error {
	st, err := s.imageStore()
	if err != nil {
		return err
	}
	p, err := httpx.ParsePage(r.URL.Query(), "image", 0, api.MaxListLimit)
	if err != nil {
		return err
	}
	all, err := st.List(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return err
	}
	key := func(img api.Image) (time.Time, string) { return img.CreatedAt, img.ID }
	slices.SortFunc(all, httpx.SortNewestFirst(key))
	httpx.WriteJSON(w, http.StatusOK, httpx.CutPage(w, r, s.d.PublicURL, p, all, key))
	return nil
}

func (s *Service) getImage(w http.ResponseWriter, r *http.Request) error {
	st, err := s.imageStore()
	if err != nil {
		return err
	}
	img, err := st.Get(r.Context(), authz.Account(r.Context()).ID, r.PathValue("id"))
	if err != nil {
		return named(err, r.PathValue("id"))
	}
	httpx.WriteJSON(w, http.StatusOK, img)
	return nil
}

func (s *Service) deleteImage(w http.ResponseWriter, r *http.Request) error {
	st, err := s.imageStore()
	if err != nil {
		return err
	}
	ctx := r.Context()
	acct := authz.Account(ctx).ID
	img, err := st.Get(ctx, acct, r.PathValue("id"))
	if err != nil {
		return named(err, r.PathValue("id"))
	}
	if err := s.snapshotsNeed(ctx, acct, img.ID); err != nil {
		return err
	}
	if err := st.Delete(ctx, acct, img.ID, s.usersAlive(ctx, acct)); err != nil {
		if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeImageInUse {
			if need := s.snapshotsNeed(ctx, acct, img.ID); need != nil {
				return need // a snapshot taken since the check above
			}
		}
		return named(err, img.ID)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// usersAlive reports whether a user of an image (Store.Use: a sandbox
// booted from it, a snapshot taken of one) is still alive: a sandbox not
// destroyed, a snapshot neither failed nor deleted. Store.Delete asks it
// under its admission lock, which a snapshot's Use takes too, so a
// snapshot taken while an image is deleted is either seen here or finds
// the image gone.
func (s *Service) usersAlive(ctx context.Context, acct string) func(id string) bool {
	var snapshots map[string]bool // listed once, on the first user no sandbox is
	return func(id string) bool {
		sb, err := s.d.Store.Sandbox(ctx, acct, id)
		if err == nil {
			return sb.Status != api.StatusDestroyed
		}
		if snapshots == nil {
			sns, err := s.d.Snapshots.ListSnapshots(ctx, acct, "")
			if err != nil {
				return true // cannot tell: keep the image
			}
			snapshots = map[string]bool{}
			for _, sn := range sns {
				snapshots[sn.ID] = sn.Status != api.SnapshotFailed
			}
		}
		return snapshots[id]
	}
}

// snapshotsNeed refuses deleting image id while a snapshot (pending or
// completed, not deleted) restores onto it: the restore would fail.
func (s *Service) snapshotsNeed(ctx context.Context, acct, id string) error {
	sns, err := s.d.Snapshots.ListSnapshots(ctx, acct, "")
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	var ids []string
	for _, sn := range sns {
		if sn.ImageID == id && sn.Status != api.SnapshotFailed {
			ids = append(ids, sn.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	shown := ids
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(ids) > len(shown) {
		more = fmt.Sprintf(" and %d more (`boxkite snapshots ls`)", len(ids)-len(shown))
	}
	return api.Errorf(http.StatusConflict, api.CodeImageInUse, "image %s is needed by %d snapshot(s) to restore", id, len(ids)).
		WithHint(fmt.Sprintf("remove them first with `boxkite snapshots rm ID`: %s%s", strings.Join(shown, ", "), more))
}

// RootFS resolves a create's image_id to the root filesystem the
// driver boots from; "" for none.
func (s *Service) RootFS(ctx context.Context, acct, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	if s.d.Images == nil {
		return "", httpx.NotSupported("image_id", "omit image_id; "+noImagesHint)
	}
	root, err := s.d.Images.RootFS(ctx, acct, id)
	if _, ok := errors.AsType[*api.Error](err); ok {
		return "", api.Errorf(http.StatusNotFound, api.CodeNotFound, "Sandbox image not found or not ready").
			WithHint("list images with `boxkite images ls`")
	}
	return root, err
}

// Use records that sandbox boots from image id (resolved by RootFS for
// the same create).
func (s *Service) Use(ctx context.Context, id, sandbox string) error {
	if s.d.Images == nil {
		return httpx.NotSupported("image_id", "omit image_id; "+noImagesHint)
	}
	err := s.d.Images.Use(ctx, id, sandbox)
	if _, ok := errors.AsType[*api.Error](err); ok {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "Sandbox image not found or not ready").
			WithHint("it was deleted while the sandbox was being created; list images with `boxkite images ls`")
	}
	return err
}

// imageAuditLog serves GET /v1/images/{id}/log?limit=&offset=: the audit
// entries of the image's build (its egress decisions and outcome), as
// GET /v1/sandboxes/{id}/log serves a sandbox's.
func (s *Service) imageAuditLog(w http.ResponseWriter, r *http.Request) error {
	st, err := s.imageStore()
	if err != nil {
		return err
	}
	limit, offset, err := httpx.LogPage(r)
	if err != nil {
		return err
	}
	img, err := st.Get(r.Context(), authz.Account(r.Context()).ID, r.PathValue("id"))
	if err != nil {
		return named(err, r.PathValue("id"))
	}
	return s.d.WriteLogPage(w, r, img.ID, limit, offset)
}
