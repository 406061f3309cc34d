package takeover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// Takeover recordings (Config.TakeoverRecording): each takeover's screen
// as an asciicast v2 file, kept in the store so it outlives the sandbox.

// maxRecording caps one recording, as the reference does; past it the
// recording stops and says it was truncated.
const maxRecording = 8 << 20

// ContentTypeAsciicast is the media type of a recording.
const ContentTypeAsciicast = "application/x-asciicast"

// recorder writes the asciicast of one takeover as its frames pass.
type recorder struct {
	mu        sync.Mutex
	now       func() time.Time
	start     time.Time
	buf       []byte
	truncated bool
	// partial is the start of a character the last output frame ended
	// in, held until its other bytes come.
	partial []byte
}

func newRecorder(now func() time.Time) *recorder {
	r := &recorder{now: now, start: now()}
	// The size is not known until the client's first resize, which is
	// recorded as an "r" event right after.
	hdr, _ := json.Marshal(map[string]any{
		"version": 2, "width": 80, "height": 24, "timestamp": r.start.Unix(),
		"env": map[string]string{"TERM": "xterm-256color", "SHELL": "/bin/bash"},
	})
	r.buf = append(hdr, '\n')
	return r
}

func (r *recorder) event(code, data string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.truncated {
		return
	}
	t := r.now().Sub(r.start).Seconds()
	line, err := json.Marshal([]any{json.Number(strconv.FormatFloat(t, 'f', 6, 64)), code, data})
	if err != nil {
		return
	}
	if len(r.buf)+len(line)+1 > maxRecording {
		r.truncated = true
		return
	}
	r.buf = append(append(r.buf, line...), '\n')
}

// output records terminal output. An event's data is a JSON string, in
// which bytes that are not UTF-8 become U+FFFD: a character whose bytes
// are split across two frames (a read of the PTY ends anywhere) is held
// back until the rest comes, and recorded whole.
func (r *recorder) output(b []byte) {
	r.mu.Lock()
	if len(r.partial) > 0 {
		b = append(r.partial, b...)
	}
	n := len(b) - incompleteTail(b)
	r.partial = append([]byte(nil), b[n:]...)
	r.mu.Unlock()
	if n > 0 {
		r.event("o", string(b[:n]))
	}
}

// incompleteTail is how many bytes at the end of b begin a UTF-8 encoded
// character without finishing it (0 to 3).
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// control records a resize a client asked for.
func (r *recorder) control(b []byte) {
	var c api.PTYControl
	if json.Unmarshal(b, &c) == nil && c.Type == api.PTYControlResize && c.Cols > 0 && c.Rows > 0 {
		r.event("r", fmt.Sprintf("%dx%d", c.Cols, c.Rows))
	}
}

func (r *recorder) result() ([]byte, bool) {
	r.mu.Lock()
	rest := r.partial
	r.partial = nil
	r.mu.Unlock()
	if len(rest) > 0 { // the session ended within a character
		r.event("o", string(rest))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf, r.truncated
}

// saveRecording stores rec for sb and adds what the takeover_end entry
// says about it to detail. A failure is logged and noted, never fatal.
func (s *Service) saveRecording(ctx context.Context, sb *model.Sandbox, rec *recorder, detail map[string]any) {
	data, truncated := rec.result()
	r := &model.Recording{ID: model.NewID(), SandboxID: sb.ID, AccountID: sb.AccountID, Data: data, Truncated: truncated, CreatedAt: s.d.Now()}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), audit.Timeout)
	defer cancel()
	if err := s.d.Store.SaveRecording(ctx, r); err != nil {
		s.d.Log.ErrorContext(ctx, "save takeover recording", "sandbox", sb.ID, "err", err)
		detail["recording_error"] = "not saved"
		return
	}
	detail["recording_id"], detail["recording_bytes"], detail["recording_truncated"] = r.ID, len(data), truncated
}

// getRecording serves GET /v1/sandboxes/{id}/takeover-recordings/{recording_id},
// also after the sandbox is gone.
func (s *Service) getRecording(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.d.LoadSandbox(r)
	if err != nil {
		return err
	}
	id := r.PathValue("recording_id")
	rec, err := s.d.Store.Recording(r.Context(), sb.AccountID, sb.ID, id)
	if errors.Is(err, model.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "recording %s not found", id).
			WithHint("a takeover_end entry's detail.recording_id names its recording; the server records only with --takeover-recording")
	}
	if err != nil {
		return fmt.Errorf("load recording: %w", err)
	}
	w.Header().Set("Content-Type", ContentTypeAsciicast)
	w.Header().Set("Content-Length", strconv.Itoa(len(rec.Data)))
	_, _ = w.Write(rec.Data)
	return nil
}
