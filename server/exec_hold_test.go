package server

import (
	"net/http/httptest"
	"testing"
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
		h := newExitHolder(rec)
		for i := 0; i < len(stream); i += size {
			if _, err := h.Write([]byte(stream[i:min(i+size, len(stream))])); err != nil {
				t.Fatal(err)
			}
		}
		if got := rec.Body.String(); got != out {
			t.Errorf("chunks of %d: before release the client has %q, want %q", size, got, out)
		}
		h.release()
		if got := rec.Body.String(); got != stream {
			t.Errorf("chunks of %d: after release the client has %q, want %q", size, got, stream)
		}
	}
}

// TestExitHolderPartialLine: a line that cannot be the exit event is not
// held back, even before its newline arrives.
func TestExitHolderPartialLine(t *testing.T) {
	rec := httptest.NewRecorder()
	h := newExitHolder(rec)
	h.Write([]byte(`{"type":"stdout","data":"progr`))
	if got, want := rec.Body.String(), `{"type":"stdout","data":"progr`; got != want {
		t.Errorf("client has %q, want %q", got, want)
	}
}

// TestHeldResponse: nothing reaches the client before release, and an
// answer that never started releases nothing.
func TestHeldResponse(t *testing.T) {
	rec := httptest.NewRecorder()
	h := newHeldResponse(rec)
	h.Header().Set("Content-Type", "application/json")
	h.WriteHeader(201)
	h.Write([]byte(`{"ok":true}`))
	if rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
		t.Fatalf("client has %q before release", rec.Body.String())
	}
	h.release()
	if rec.Code != 201 || rec.Body.String() != `{"ok":true}` || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("after release: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}

	rec = httptest.NewRecorder()
	newHeldResponse(rec).release()
	newExitHolder(rec).release()
	if rec.Body.Len() != 0 || rec.Flushed {
		t.Errorf("an answer that never started sent %q (flushed %v)", rec.Body.String(), rec.Flushed)
	}
}

// TestTailHolder: an audited answer reaches the client whole except its
// last byte until release, however it is cut; event streams pass whole.
func TestTailHolder(t *testing.T) {
	const body = `{"path":"/workspace/a.txt","bytes_written":12}`
	for _, size := range []int{1, 2, 5, len(body)} {
		rec := httptest.NewRecorder()
		h := newTailHolder(rec)
		h.Header().Set("Content-Type", "application/json")
		for i := 0; i < len(body); i += size {
			if _, err := h.Write([]byte(body[i:min(i+size, len(body))])); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := rec.Body.String(), body[:len(body)-1]; got != want {
			t.Errorf("chunks of %d: before release the client has %q, want %q", size, got, want)
		}
		h.release()
		h.release() // a second release sends nothing more
		if got := rec.Body.String(); got != body {
			t.Errorf("chunks of %d: after release the client has %q, want %q", size, got, body)
		}
	}

	rec := httptest.NewRecorder()
	h := newTailHolder(rec)
	h.Header().Set("Content-Type", "text/event-stream")
	h.Write([]byte("data: 1\n\n"))
	if got := rec.Body.String(); got != "data: 1\n\n" {
		t.Errorf("event stream: client has %q before release, want the whole event", got)
	}
}
