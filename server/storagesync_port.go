package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/storagesync"
)

// StorageConfig is the operator's configuration of the workspace sync to
// object storage (server/storagesync, docs/storage.md); a nil Backend
// turns it off. Zero fields take storagesync's defaults.
type StorageConfig struct {
	Backend      storagesync.Backend
	Prefix       string
	Ignore       []string // directory names never synced; nil: storagesync.DefaultIgnore
	Interval     time.Duration
	FinalTimeout time.Duration
	Retention    time.Duration
	Bandwidth    int64    // bytes per second
	Secrets      []string // the backend's credentials, cut out of errors
	// JournalMaxDirs is each sidecar's change-journal budget in watched
	// directories (0: storagesync.DefaultJournalMaxDirs).
	JournalMaxDirs int
}

// newStorageSync builds the sync when a backend is configured and the
// store keeps its state (the SQL store does).
func (s *Server) newStorageSync() error {
	c := s.cfg.Storage
	if c.Backend == nil {
		return nil
	}
	var st any = s.store
	if w, ok := st.(interface{ Unwrap() model.Store }); ok {
		st = w.Unwrap()
	}
	ss, ok := st.(storagesync.Store)
	if !ok {
		return fmt.Errorf("server config: object storage needs a store that keeps its queue (the SQL store)")
	}
	svc, err := storagesync.New(storagesync.Deps{
		Backend: c.Backend, Store: ss, Files: syncFiles{s}, Log: s.log, Now: func() time.Time { return s.now() },
		Audit: func(ctx context.Context, sb *model.Sandbox, op string, detail map[string]any) error {
			return s.audit(ctx, audit.Record{Sandbox: sb, Source: "system", Operation: op, Detail: detail, Started: s.now()})
		},
		Prefix: c.Prefix, Ignore: c.Ignore, Interval: c.Interval, FinalTimeout: c.FinalTimeout,
		Retention: c.Retention, Bandwidth: c.Bandwidth, Secrets: c.Secrets, JournalMaxDirs: c.JournalMaxDirs,
	})
	if err != nil {
		return err
	}
	s.storageSync = svc
	prev := s.alog.Committed
	s.alog.Committed = func(ctx context.Context, e *model.ExecLogEntry) {
		if prev != nil {
			prev(ctx, e)
		}
		svc.Committed(ctx, e)
	}
	return nil
}

// storageHooks tells the storage sync of sandboxes created and about to
// be destroyed (sandbox.Hooks); nothing when no storage is configured.
type storageHooks struct{ s *Server }

func (h storageHooks) Created(ctx context.Context, sb *model.Sandbox) {
	if h.s.storageSync != nil {
		h.s.storageSync.Created(context.WithoutCancel(ctx), sb)
	}
}

func (h storageHooks) Destroying(ctx context.Context, sb *model.Sandbox, readable bool) {
	if h.s.storageSync != nil {
		h.s.storageSync.Final(ctx, sb, readable)
	}
}

// FinalFlush runs the final storage flush (docs/storage.md) of each
// active sandbox among ids, four at once, as a destroy would: the server's
// caller is about to stop them with the server (the local driver at
// SIGTERM, `boxkite down`), after which their files can no longer be read
// and what commands wrote since the last flush would be lost. It returns
// when all are done or when ctx ends; nothing without object storage.
func (s *Server) FinalFlush(ctx context.Context, ids []string) {
	if s.storageSync == nil || len(ids) == 0 {
		return
	}
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sb, err := s.store.SandboxByID(ctx, id)
			if err != nil || !sb.Active() {
				return
			}
			s.storageSync.Final(ctx, sb, true)
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("final storage flush at shutdown cut short", "err", ctx.Err())
	}
}

// syncFiles reads workspaces for the sync through the sidecars' file API
// (GET /files/tree, POST /files/bundle), whatever the driver.
type syncFiles struct{ s *Server }

func (f syncFiles) do(ctx context.Context, sandboxID, method, path string, q url.Values, body io.Reader) (*http.Response, error) {
	s := f.s
	sb, err := s.store.SandboxByID(ctx, sandboxID)
	if err != nil {
		return nil, fmt.Errorf("load sandbox: %w", err)
	}
	if !sb.Active() {
		return nil, fmt.Errorf("sandbox %s is %s", sb.ID, sb.Status)
	}
	client, err := s.sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("sidecar client: %w", err)
	}
	req, err := sidecar.NewRequest(ctx, method, path, q, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(api.HeaderSidecarToken, sb.Endpoint.Token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sidecar %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		if sidecar.Outdated(resp, method, path, sb.ID) != nil {
			// A sidecar older than the sync's own routes: say so, and
			// how to get one that serves them, not its bare 404.
			return nil, sidecar.OutdatedError(sb.ID, "the workspace sync ("+method+" "+path+")")
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("sidecar %s: %s: %s", path, resp.Status, msg)
	}
	return resp, nil
}

func (f syncFiles) Tree(ctx context.Context, sandboxID string, tq storagesync.TreeQuery) (api.TreeResult, error) {
	var out api.TreeResult
	q := url.Values{"path": {tq.Root}, "skip": tq.Skip}
	if tq.Journal {
		q.Set("since", tq.Since)
		q.Set("max_dirs", strconv.Itoa(tq.MaxDirs))
	}
	resp, err := f.do(ctx, sandboxID, http.MethodGet, "/files/tree", q, nil)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("decode tree: %w", err)
	}
	return out, nil
}

func (f syncFiles) Bundle(ctx context.Context, sandboxID, root string, paths []string) (io.ReadCloser, error) {
	body, err := json.Marshal(api.BundleRequest{Root: root, Paths: paths})
	if err != nil {
		return nil, err
	}
	resp, err := f.do(ctx, sandboxID, http.MethodPost, "/files/bundle", nil, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
