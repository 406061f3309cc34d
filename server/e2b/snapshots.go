package e2b

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
)

// E2B's snapshots and fork on boxkite's (docs/snapshots.md): a snapshot's
// id is what Sandbox.create takes as its template to restore it, and what
// Sandbox.deleteSnapshot deletes (DELETE /templates/{id}).

// maxFork is the most children one fork asks for.
const maxFork = 10

// snapshotJSON is E2B's SnapshotInfo.
type snapshotJSON struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func toSnapshotJSON(sn SnapshotInfo) snapshotJSON {
	names := []string{}
	if sn.Name != "" {
		names = append(names, sn.Name)
	}
	return snapshotJSON{SnapshotID: sn.ID, Names: names}
}

// createSnapshot serves POST /sandboxes/{id}/snapshots {"name"}.
func (h *Handler) createSnapshot(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req struct {
		Name string `json:"name"`
	}
	if err := apihttp.DecodeText(w, r, &req, maxBody); err != nil {
		return err
	}
	// A NUL character, which PostgreSQL's text cannot hold, DecodeText
	// refused already.
	if len(req.Name) > 200 {
		return api.Invalid("name", "name is longer than 200 characters", "")
	}
	sn, err := h.cp.Snapshot(r.Context(), c, r.PathValue("id"), req.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toSnapshotJSON(sn))
	return nil
}

// listSnapshots serves GET /snapshots?sandboxID=&name=&limit=&nextToken=,
// newest first, a page of limit at a time (X-Next-Token).
func (h *Handler) listSnapshots(w http.ResponseWriter, r *http.Request, c Caller) error {
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		return err
	}
	after := ""
	if v := q.Get("nextToken"); v != "" {
		if after, err = pageAfter(v); err != nil {
			return err
		}
	}
	sns, err := h.cp.Snapshots(r.Context(), c, q.Get("sandboxID"))
	if errors.Is(err, ErrNotFound) { // another account's sandbox, or none: no snapshots
		sns, err = nil, nil
	}
	if err != nil {
		return err
	}
	if name := q.Get("name"); name != "" {
		sns = slices.DeleteFunc(sns, func(sn SnapshotInfo) bool { return !nameMatches(sn, name) })
	}
	if after != "" {
		i := slices.IndexFunc(sns, func(sn SnapshotInfo) bool { return sn.ID == after })
		sns = sns[i+1:] // -1 (a token of a snapshot gone since) starts over
	}
	if len(sns) > limit {
		sns = sns[:limit]
		w.Header().Set("X-Next-Token", base64.RawURLEncoding.EncodeToString([]byte(sns[len(sns)-1].ID)))
	}
	out := make([]snapshotJSON, len(sns))
	for i, sn := range sns {
		out[i] = toSnapshotJSON(sn)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// defaultTag is the tag of a snapshot whose name has none, as E2B's.
const defaultTag = "default"

// nameMatches reports whether listSnapshots({name}) names sn, as E2B's
// GET /snapshots reads name: "[namespace/]alias[:tag]" or the snapshot's
// id, trimmed and in any case. A name without a tag matches every tag; a
// name with one, the snapshots of that tag, "default" those whose name
// has none. The namespace is the team's in E2B (another one is refused
// there): here it is left out of the comparison on both sides. The
// filter was the exact name, so "snap:default", "team/snap" or the id
// found nothing, and "snap" not a snapshot named "snap:v1".
func nameMatches(sn SnapshotInfo, name string) bool {
	want, wantTag, tagged := splitName(name)
	alias, tag, _ := splitName(sn.Name)
	switch {
	case want == strings.ToLower(sn.ID):
	case sn.Name == "" || want != alias:
		return false
	}
	return !tagged || wantTag == tag
}

// splitName splits an E2B template name, "[namespace/]alias[:tag]", into
// its alias and tag (defaultTag when it has none, or an empty one),
// lowercased; tagged says whether it had a tag.
func splitName(name string) (alias, tag string, tagged bool) {
	ident, tag, tagged := strings.Cut(strings.ToLower(strings.TrimSpace(name)), ":")
	if _, a, ok := strings.Cut(ident, "/"); ok {
		ident = a
	}
	if tag == "" {
		tag = defaultTag
	}
	return ident, tag, tagged
}

// deleteTemplate serves DELETE /templates/{id}: a snapshot's id deletes
// it; anything else is not found (boxkite has no E2B templates).
func (h *Handler) deleteTemplate(w http.ResponseWriter, r *http.Request, c Caller) error {
	if err := h.cp.DeleteSnapshot(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// forkResult is one entry of the fork answer.
type forkResult struct {
	Sandbox *sandboxJSON `json:"sandbox,omitempty"`
	Error   *errorBody   `json:"error,omitempty"`
}

// fork serves POST /sandboxes/{id}/fork {"timeout", "count"}: count
// children (1 by default) with the parent's files as they are now, each
// kept timeout seconds (300 by default), recorded with the parent's
// template, metadata and environment.
func (h *Handler) fork(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req struct {
		Timeout *int `json:"timeout"`
		Count   *int `json:"count"`
	}
	if err := apihttp.DecodeText(w, r, &req, maxBody); err != nil {
		return err
	}
	count, timeout := 1, defaultTimeout
	if req.Count != nil {
		count = *req.Count
	}
	if count < 1 || count > maxFork {
		return api.Invalid("count", fmt.Sprintf("count must be between 1 and %d", maxFork), "")
	}
	if req.Timeout != nil {
		if *req.Timeout < 1 {
			return api.Invalid("timeout", "timeout must be at least 1 second", "")
		}
		timeout = seconds(*req.Timeout)
	}
	id := r.PathValue("id")
	parent, err := h.cp.Sandbox(r.Context(), c, id)
	if err != nil {
		return err
	}
	prec, err := h.record(r.Context(), parent)
	if err != nil {
		return err
	}
	kids, err := h.cp.Fork(r.Context(), c, id, count, timeout)
	if err != nil {
		return err
	}
	out := make([]forkResult, len(kids))
	for i, k := range kids {
		rec := Record{
			SandboxID: k.ID, AccountID: c.AccountID(), TemplateID: prec.TemplateID,
			Metadata: prec.Metadata, EnvVars: prec.EnvVars, CreatedAt: k.CreatedAt,
		}
		if err := h.store.PutE2BSandbox(r.Context(), rec); err != nil {
			h.destroyAll(r.Context(), c, kids)
			return fmt.Errorf("record e2b sandbox: %w", err)
		}
		sj, err := h.sandboxJSON(r, rec, c)
		if err != nil {
			h.destroyAll(r.Context(), c, kids)
			return err
		}
		out[i].Sandbox = &sj
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// destroyAll ends sandboxes an answer could not hand over.
func (h *Handler) destroyAll(ctx context.Context, c Caller, sbs []Sandbox) {
	ctx = context.WithoutCancel(ctx)
	for _, sb := range sbs {
		if err := h.cp.Destroy(ctx, c, sb.ID); err != nil {
			h.log.ErrorContext(ctx, "destroy a fork child that could not be recorded", "sandbox", sb.ID, "err", err)
		}
	}
}
