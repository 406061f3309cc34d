package auditlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// Watch streams (GET /v1/sandboxes/{id}/watch, design/API.md "Watch is
// pushed").
const (
	// watchReplay is how many of the newest entries a new watcher gets first.
	watchReplay = 100
	// watchBatch bounds one read of the store while catching up.
	watchBatch = 500
)

// watch serves GET /v1/sandboxes/{id}/watch as server-sent events:
// one event per audit entry, "id: <entry id>" and "data: <entry JSON>".
// It first replays the newest watchReplay entries, oldest first, or, with
// Last-Event-ID (header or ?last_event_id=), every entry after that one;
// then it pushes each new entry as it is appended. Destroyed sandboxes can
// be watched too: their log is replayed and the stream stays open.
func (s *Service) watch(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	sb, err := s.d.LoadSandbox(r)
	if err != nil {
		return err
	}
	lastID := r.Header.Get("Last-Event-ID")
	if lastID == "" {
		lastID = r.URL.Query().Get("last_event_id")
	}
	// Subscribe before reading the store: an entry appended in between is
	// then both read and queued, and the cursor drops the second copy.
	sub := s.d.Audit.Broker.Subscribe(sb.ID)
	defer sub.Close()
	s.d.Watching(1)
	defer s.d.Watching(-1)

	cursor, err := s.watchStart(r, sb.ID, lastID)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell reverse proxies in front not to buffer
	w.WriteHeader(http.StatusOK)
	ws := &watchStream{w: w, rc: http.NewResponseController(w), cursor: cursor}
	if err := ws.flush(); err != nil {
		return nil // the client went away
	}
	if err := s.watchCatchUp(r, sb.ID, ws); err != nil {
		return s.watchEnded(r, err)
	}
	keepAlive := time.NewTicker(s.d.KeepAlive())
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.d.Audit.Broker.Closing:
			return nil // the server is shutting down; clients resume with Last-Event-ID
		case <-keepAlive.C:
			if err := ws.comment("keep-alive"); err != nil {
				return nil
			}
		case <-sub.Wake:
			entries, reread := sub.Take()
			for _, e := range entries {
				switch {
				case e.Seq <= ws.cursor: // already sent
				case e.Seq == ws.cursor+1:
					if err := ws.send(e); err != nil {
						return nil
					}
				default: // one is missing in between: the store has it
					reread = true
				}
			}
			if reread {
				if err := s.watchCatchUp(r, sb.ID, ws); err != nil {
					return s.watchEnded(r, err)
				}
			}
			if err := ws.flush(); err != nil {
				return nil
			}
		}
	}
}

// watchStart returns the Seq after which the stream starts: that of
// lastID when it is one of the sandbox's entries, else such that the
// newest watchReplay entries are replayed.
func (s *Service) watchStart(r *http.Request, sandboxID, lastID string) (int64, error) {
	ctx := r.Context()
	if lastID != "" {
		seq, err := s.d.Store.ExecLogSeq(ctx, sandboxID, lastID)
		if err == nil {
			return seq, nil
		}
		if !errors.Is(err, model.ErrNotFound) {
			return 0, fmt.Errorf("find last event: %w", err)
		}
		// An id this sandbox never had (a stale or foreign one): start
		// as a new watcher does rather than fail an automatic reconnect.
		s.d.Log.DebugContext(ctx, "watch: unknown Last-Event-ID", "sandbox", sandboxID, "last_event_id", lastID)
	}
	_, total, err := s.d.Store.ExecLog(ctx, sandboxID, 1, 0)
	if err != nil {
		return 0, fmt.Errorf("count exec log: %w", err)
	}
	// Seq runs 1, 2, … without gaps, so the count is the newest Seq.
	return max(int64(total)-watchReplay, 0), nil
}

// watchCatchUp sends every stored entry after the stream's cursor.
func (s *Service) watchCatchUp(r *http.Request, sandboxID string, ws *watchStream) error {
	for {
		entries, err := s.d.Store.ExecLogAfter(r.Context(), sandboxID, ws.cursor, watchBatch)
		if err != nil {
			return fmt.Errorf("read exec log: %w", err)
		}
		for _, e := range entries {
			if e.Seq != ws.cursor+1 {
				// Appends are serialised per sandbox and Seq has no gaps;
				// a hole means a row was removed behind our back.
				return fmt.Errorf("exec log of %s jumps from seq %d to %d", sandboxID, ws.cursor, e.Seq)
			}
			if err := ws.send(e); err != nil {
				return errClientGone
			}
		}
		if len(entries) < watchBatch {
			return ws.flush()
		}
	}
}

// errClientGone ends a stream whose client stopped reading.
var errClientGone = errors.New("watch client went away")

// watchEnded logs why a started stream stops; nothing can be sent any more.
func (s *Service) watchEnded(r *http.Request, err error) error {
	if errors.Is(err, errClientGone) || r.Context().Err() != nil {
		return nil
	}
	s.d.Log.ErrorContext(r.Context(), "watch stream ended", "err", err)
	return nil
}

// watchStream writes events and remembers the last Seq sent.
type watchStream struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	cursor int64
	buf    []byte
}

func (ws *watchStream) send(e *model.ExecLogEntry) error {
	data, err := json.Marshal(e.ToAPI())
	if err != nil {
		return fmt.Errorf("encode log entry: %w", err)
	}
	ws.buf = append(ws.buf[:0], "id: "...)
	ws.buf = append(ws.buf, e.ID...)
	ws.buf = append(ws.buf, "\ndata: "...)
	ws.buf = append(ws.buf, data...)
	ws.buf = append(ws.buf, "\n\n"...)
	if _, err := ws.w.Write(ws.buf); err != nil {
		return err
	}
	ws.cursor = e.Seq
	return nil
}

func (ws *watchStream) comment(text string) error {
	if _, err := ws.w.Write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return ws.flush()
}

func (ws *watchStream) flush() error { return ws.rc.Flush() }
