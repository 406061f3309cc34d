package hold

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// TestExitHolder: output lines pass as they come, however the stream is
// cut; the exit event waits for release.
func TestExitHolder(t *testing.T) {
	const (
		out  = `{"type":"stdout","data":"a"}` + "\n" + `{"type":"stderr","data":"{\"type\":\"exit\"}"}` + "\n"
		exit = `{"type":"exit","exit_code":0,"duration_ms":3}` + "\n"
	)
	stream := out + exit
	for _, size := range []int{1, 2, 3, 7, 13, 29, 64, len(stream)} {
		rec := httptest.NewRecorder()
		h := NewExit(rec)
		for i := 0; i < len(stream); i += size {
			if _, err := h.Write([]byte(stream[i:min(i+size, len(stream))])); err != nil {
				t.Fatal(err)
			}
		}
		if got := rec.Body.String(); got != out {
			t.Errorf("chunks of %d: before release the client has %q, want %q", size, got, out)
		}
		h.Release()
		if got := rec.Body.String(); got != stream {
			t.Errorf("chunks of %d: after release the client has %q, want %q", size, got, stream)
		}
	}
}

// TestExitHolderPartialLine: a line waits for its newline, so a stream
// cut mid-line ends with the error event on a line of its own and every
// line the client has is whole JSON.
func TestExitHolderPartialLine(t *testing.T) {
	rec := httptest.NewRecorder()
	h := NewExit(rec)
	h.Write([]byte(`{"type":"stdout","data":"one"}` + "\n" + `{"type":"stdout","data":"progr`))
	if got, want := rec.Body.String(), `{"type":"stdout","data":"one"}`+"\n"; got != want {
		t.Errorf("client has %q, want %q", got, want)
	}
	if err := h.Fail(api.Errorf(http.StatusGone, api.CodeSandboxLost, "gone")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("stream %q, want the whole line and an error event", rec.Body.String())
	}
	var ev api.ExecEvent
	if err := json.Unmarshal([]byte(lines[1]), &ev); err != nil || ev.Type != api.EventError || ev.Error.Code != api.CodeSandboxLost {
		t.Errorf("last line %q (%v), want the error event", lines[1], err)
	}
}

// TestHeldResponse: nothing reaches the client before release, and an
// answer that never started releases nothing.
func TestHeldResponse(t *testing.T) {
	rec := httptest.NewRecorder()
	h := NewResponse(rec)
	h.Header().Set("Content-Type", "application/json")
	h.WriteHeader(201)
	h.Write([]byte(`{"ok":true}`))
	if rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
		t.Fatalf("client has %q before release", rec.Body.String())
	}
	h.Release()
	if rec.Code != 201 || rec.Body.String() != `{"ok":true}` || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("after release: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}

	rec = httptest.NewRecorder()
	NewResponse(rec).Release()
	NewExit(rec).Release()
	if rec.Body.Len() != 0 || rec.Flushed {
		t.Errorf("an answer that never started sent %q (flushed %v)", rec.Body.String(), rec.Flushed)
	}
}

// TestTailHolder: an audited JSON answer is held whole until release, and
// any other answer reaches the client except its last byte, however it is
// cut; event streams pass whole. If the audit entry fails, a held answer
// is replaced by the error and one already passing is broken off.
func TestTailHolder(t *testing.T) {
	const body = `{"path":"/workspace/a.txt","bytes_written":12}`
	for _, tt := range []struct {
		contentType, wantBefore string
	}{
		{"application/json", ""},
		{"application/octet-stream", body[:len(body)-1]},
	} {
		for _, size := range []int{1, 2, 5, len(body)} {
			rec := httptest.NewRecorder()
			h := NewTail(rec)
			h.Header().Set("Content-Type", tt.contentType)
			for i := 0; i < len(body); i += size {
				if _, err := h.Write([]byte(body[i:min(i+size, len(body))])); err != nil {
					t.Fatal(err)
				}
			}
			if got := rec.Body.String(); got != tt.wantBefore {
				t.Errorf("%s in chunks of %d: before release the client has %q, want %q", tt.contentType, size, got, tt.wantBefore)
			}
			h.Release()
			h.Release() // a second release sends nothing more
			if got := rec.Body.String(); got != body || rec.Header().Get("Content-Type") != tt.contentType {
				t.Errorf("%s in chunks of %d: after release the client has %q (%v), want %q", tt.contentType, size, got, rec.Header(), body)
			}
		}
	}

	rec := httptest.NewRecorder()
	h := NewTail(rec)
	h.Header().Set("Content-Type", "text/event-stream")
	h.Write([]byte("data: 1\n\n"))
	if got := rec.Body.String(); got != "data: 1\n\n" {
		t.Errorf("event stream: client has %q before release, want the whole event", got)
	}

	// A JSON answer larger than maxHeldWhole falls back to the last byte.
	rec = httptest.NewRecorder()
	h = NewTail(rec)
	h.Header().Set("Content-Type", "application/json")
	big := bytes.Repeat([]byte("x"), maxHeldWhole+10)
	h.Write(big[:maxHeldWhole])
	h.Write(big[maxHeldWhole:])
	if rec.Body.Len() != len(big)-1 {
		t.Errorf("an oversized JSON answer: the client has %d bytes before release, want %d", rec.Body.Len(), len(big)-1)
	}

	// The entry failed: a held answer turns into the error, headers and all.
	rec = httptest.NewRecorder()
	h = NewTail(rec)
	h.Header().Set("Content-Type", "application/json")
	h.Header().Set("Content-Length", strconv.Itoa(len(body)))
	h.WriteHeader(200)
	h.Write([]byte(body))
	want := errors.New("audit failed")
	if got := h.Fail(want); got != want || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != "" {
		t.Errorf("fail of a held answer = %v, client has %q %v; want the error back and nothing sent", got, rec.Body.String(), rec.Header())
	}
	// … and one already passing is broken off.
	rec = httptest.NewRecorder()
	h = NewTail(rec)
	h.Header().Set("Content-Type", "application/octet-stream")
	h.Write([]byte(body))
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("fail of a passing answer panicked with %v, want http.ErrAbortHandler", p)
			}
		}()
		h.Fail(want)
	}()
}

// TestExitHolderFail: a streamed exec whose audit entry fails ends with an
// error event carrying the exit code, never the exit event.
func TestExitHolderFail(t *testing.T) {
	rec := httptest.NewRecorder()
	h := NewExit(rec)
	h.Header().Set("Content-Type", api.ContentTypeNDJSON)
	h.Write([]byte(`{"type":"stdout","data":"hi\n"}` + "\n" + `{"type":"exit","exit_code":3,"duration_ms":5}` + "\n"))
	err := audit.WithOutcome(audit.NotRecorded("exec", model.ErrStoreReadOnly), map[string]any{"exit_code": 3})
	if got := h.Fail(err); got != nil {
		t.Fatalf("fail = %v, want nil (the stream carries the error)", got)
	}
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	if len(lines) != 2 || lines[0] != `{"type":"stdout","data":"hi\n"}` {
		t.Fatalf("stream %q, want the output then one error event", rec.Body.String())
	}
	var ev api.ExecEvent
	if err := json.Unmarshal([]byte(lines[1]), &ev); err != nil || ev.Type != api.EventError || ev.Error == nil {
		t.Fatalf("last line %q: %v", lines[1], err)
	}
	d, _ := ev.Error.Details.(map[string]any)
	if ev.Error.Code != api.CodeAuditUnavailable || d["exit_code"] != 3.0 || d["performed"] != true || d["reason"] != "the database is read-only" {
		t.Errorf("error event %+v", ev.Error)
	}
}

// TestSetStopReason: the control plane's stop_reason goes into the held
// JSON result, or the held exit event of a stream, and nothing else: the
// output lines that went before are untouched, the length is told anew.
func TestSetStopReason(t *testing.T) {
	const reason = api.StopReasonMemoryLimit
	t.Run("result", func(t *testing.T) {
		for _, tc := range []struct{ name, body, want string }{
			{"result", `{"exit_code":137,"stdout":"}","stderr":"Killed\n"}` + "\n", `{"exit_code":137,"stdout":"}","stderr":"Killed\n","stop_reason":"memory_limit"}` + "\n"},
			{"empty object", `{}`, `{"stop_reason":"memory_limit"}`},
			{"not an object is left", `[1]`, `[1]`},
			{"a cut object is left", `{"exit_code":1`, `{"exit_code":1`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rec := httptest.NewRecorder()
				h := NewResponse(rec)
				h.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
				h.WriteHeader(http.StatusOK)
				h.Write([]byte(tc.body))
				h.SetStopReason(reason)
				h.Release()
				if got := rec.Body.String(); got != tc.want {
					t.Errorf("body = %s, want %s", got, tc.want)
				}
				if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(tc.want)) {
					t.Errorf("Content-Length = %s, want %d", got, len(tc.want))
				}
			})
		}
	})
	t.Run("stream", func(t *testing.T) {
		const out = `{"type":"stderr","data":"Killed\n"}` + "\n"
		rec := httptest.NewRecorder()
		h := NewExit(rec)
		h.Write([]byte(out))
		h.SetStopReason(reason) // no exit event yet: nothing to mark
		h.Write([]byte(`{"type":"exit","exit_code":137,"duration_ms":3}` + "\n"))
		h.SetStopReason(reason)
		h.Release()
		want := out + `{"type":"exit","exit_code":137,"duration_ms":3,"stop_reason":"memory_limit"}` + "\n"
		if got := rec.Body.String(); got != want {
			t.Errorf("stream = %s, want %s", got, want)
		}
		var ev api.ExecEvent
		lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil || ev.StopReason != reason {
			t.Errorf("exit event = %+v (%v), want stop_reason %q", ev, err, reason)
		}
	})
}
