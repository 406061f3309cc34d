package envd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem"
)

// openWatch starts the sidecar's watch stream (POST /watch/stream) on dir
// and returns it once the watch is armed: a change made after openWatch
// returns is reported.
func (h *Handler) openWatch(ctx context.Context, sess Session, dir string, recursive bool) (*json.Decoder, io.Closer, error) {
	body, err := json.Marshal(api.WatchRequest{Path: inSandbox(dir), Recursive: recursive})
	if err != nil {
		return nil, nil, err
	}
	resp, err := sidecarOK(ctx, sess, http.MethodPost, "/watch/stream", nil, bytes.NewReader(body),
		http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return nil, nil, h.rpcError(ctx, askedError(err, dir))
	}
	dec := json.NewDecoder(resp.Body)
	var first api.WatchStreamEvent
	if err := dec.Decode(&first); err != nil || first.Type != api.WatchStreamArmed {
		resp.Body.Close()
		return nil, nil, connect.NewError(connect.CodeUnavailable, errors.New("the sandbox ended the watch before it was in place"))
	}
	return dec, resp.Body, nil
}

// watchEvents converts a batch of the sidecar's changes to envd events.
// Moving a file out of the directory is a rename, moving one in a create,
// as envd's own watcher reports them.
func watchEvents(changes []api.WatchChange) []*filesystem.FilesystemEvent {
	var out []*filesystem.FilesystemEvent
	for _, c := range changes {
		t := filesystem.EventType_EVENT_TYPE_UNSPECIFIED
		switch c.Event {
		case api.WatchCreated, api.WatchMovedTo:
			t = filesystem.EventType_EVENT_TYPE_CREATE
		case api.WatchModified:
			t = filesystem.EventType_EVENT_TYPE_WRITE
		case api.WatchDeleted:
			t = filesystem.EventType_EVENT_TYPE_REMOVE
		case api.WatchMovedFrom:
			t = filesystem.EventType_EVENT_TYPE_RENAME
		}
		if t != filesystem.EventType_EVENT_TYPE_UNSPECIFIED {
			out = append(out, &filesystem.FilesystemEvent{Name: c.Path, Type: t})
		}
	}
	return out
}

// WatchDir streams the changes in a directory: start once the watch is in
// place, then events and keepalives until the stream's deadline or the
// client leaves.
func (s filesystemService) WatchDir(ctx context.Context, req *connect.Request[filesystem.WatchDirRequest], stream *connect.ServerStream[filesystem.WatchDirResponse]) error {
	sess := sessionFrom(ctx)
	dir := absPath(req.Msg.GetPath())
	if err := s.h.auditWatch(ctx, sess, dir, req.Msg.GetRecursive()); err != nil {
		return err
	}
	dec, body, err := s.h.openWatch(ctx, sess, dir, req.Msg.GetRecursive())
	if err != nil {
		return err
	}
	defer body.Close()
	if err := stream.Send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Start{Start: &filesystem.WatchDirResponse_StartEvent{}}}); err != nil {
		return err
	}
	keepalive := &filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Keepalive{Keepalive: &filesystem.WatchDirResponse_KeepAlive{}}}
	for {
		var ev api.WatchStreamEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return connect.NewError(connect.CodeUnavailable, errors.New("the sandbox ended the watch"))
		}
		if ev.Type == api.WatchStreamKeepAlive {
			if err := stream.Send(keepalive); err != nil {
				return err
			}
			continue
		}
		for _, fe := range watchEvents(ev.Changes) {
			if err := stream.Send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Filesystem{Filesystem: fe}}); err != nil {
				return err
			}
		}
	}
}

func (h *Handler) auditWatch(ctx context.Context, sess Session, dir string, recursive bool) error {
	err := sess.Audit(ctx, AuditEntry{
		Operation: "watch", Detail: map[string]any{"path": dir, "recursive": recursive, "interface": "e2b"}, Started: time.Now(),
	})
	if err != nil {
		return h.rpcError(ctx, err)
	}
	return nil
}

// A watcher is the polled form of a watch (CreateWatcher, then
// GetWatcherEvents until RemoveWatcher), which the Python SDK's
// synchronous client uses: events pile up here between polls.
type watcher struct {
	sandboxID string
	cancel    context.CancelFunc

	mu     sync.Mutex
	events []*filesystem.FilesystemEvent
	err    error // why the watch ended, once it has
}

// Bounds of the watcher table.
const (
	maxWatchersPerSandbox = 16
	maxWatcherEvents      = 10000
)

type watcherTable struct {
	mu   sync.Mutex
	byID map[string]*watcher
}

func newWatcherTable() *watcherTable { return &watcherTable{byID: map[string]*watcher{}} }

func (t *watcherTable) add(w *watcher) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, o := range t.byID {
		if o.sandboxID == w.sandboxID {
			n++
		}
	}
	if n >= maxWatchersPerSandbox {
		return "", connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("a sandbox may have at most %d watchers; remove one first", maxWatchersPerSandbox))
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	t.byID[id] = w
	return id, nil
}

func (t *watcherTable) get(sandboxID, id string) (*watcher, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.byID[id]; ok && w.sandboxID == sandboxID {
		return w, nil
	}
	return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("watcher %s not found", id))
}

func (t *watcherTable) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byID, id)
}

// CreateWatcher starts a polled watch and returns its id once it is in place.
func (s filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[filesystem.CreateWatcherRequest]) (*connect.Response[filesystem.CreateWatcherResponse], error) {
	sess := sessionFrom(ctx)
	dir := absPath(req.Msg.GetPath())
	if err := s.h.auditWatch(ctx, sess, dir, req.Msg.GetRecursive()); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	dec, body, err := s.h.openWatch(wctx, sess, dir, req.Msg.GetRecursive())
	if err != nil {
		cancel()
		return nil, err
	}
	w := &watcher{sandboxID: sess.SandboxID(), cancel: cancel}
	id, err := s.h.watchers.add(w)
	if err != nil {
		cancel()
		body.Close()
		return nil, err
	}
	go func() {
		defer body.Close()
		for {
			var ev api.WatchStreamEvent
			if err := dec.Decode(&ev); err != nil {
				w.mu.Lock()
				w.err = connect.NewError(connect.CodeUnavailable, errors.New("the watch ended"))
				w.mu.Unlock()
				return
			}
			w.mu.Lock()
			if len(w.events) < maxWatcherEvents {
				w.events = append(w.events, watchEvents(ev.Changes)...)
			}
			w.mu.Unlock()
		}
	}()
	return connect.NewResponse(&filesystem.CreateWatcherResponse{WatcherId: id}), nil
}

// GetWatcherEvents returns the events since the previous call.
func (s filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[filesystem.GetWatcherEventsRequest]) (*connect.Response[filesystem.GetWatcherEventsResponse], error) {
	w, err := s.h.watchers.get(sessionFrom(ctx).SandboxID(), req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	events := w.events
	w.events = nil
	if len(events) == 0 && w.err != nil {
		s.h.watchers.remove(req.Msg.GetWatcherId())
		return nil, w.err
	}
	return connect.NewResponse(&filesystem.GetWatcherEventsResponse{Events: events}), nil
}

// RemoveWatcher ends a polled watch.
func (s filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[filesystem.RemoveWatcherRequest]) (*connect.Response[filesystem.RemoveWatcherResponse], error) {
	w, err := s.h.watchers.get(sessionFrom(ctx).SandboxID(), req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	w.cancel()
	s.h.watchers.remove(req.Msg.GetWatcherId())
	return connect.NewResponse(&filesystem.RemoveWatcherResponse{}), nil
}

// sidecarError reads the sidecar's error envelope from a non-2xx answer.
// sidecarOK is sess.Sidecar answering a failure as an error: the
// sidecar's own, read from a non-2xx answer (whose body it closes).
func sidecarOK(ctx context.Context, sess Session, method, path string, q url.Values, body io.Reader, hdr http.Header) (*http.Response, error) {
	resp, err := sess.Sidecar(ctx, method, path, q, body, hdr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, sidecarError(resp)
	}
	return resp, nil
}

func sidecarError(resp *http.Response) error {
	var env api.ErrorEnvelope
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &env) == nil && env.Error != nil {
		e := *env.Error
		if e.Status == 0 {
			e.Status = resp.StatusCode
		}
		return &e
	}
	return &api.Error{Status: resp.StatusCode, Code: api.CodeSandboxFailed, Message: fmt.Sprintf("the sandbox answered %d", resp.StatusCode)}
}
