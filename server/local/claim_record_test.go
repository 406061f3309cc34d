//go:build linux

package local

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
)

// claimTransport is a sidecar's answer to a claim, played step by step:
// it logs what happens in order, with the record and the state file's
// write, so a test can check what came before the record.
type claimTransport struct {
	mu  sync.Mutex
	log []string

	signal    bool       // reports the request written (model.WithRequestWritten)
	waitFor   chan error // after the signal, the answer waits for this (nil: none)
	writeErr  error      // fails before the request is written
	answerErr error      // fails after it
	answered  func()     // called once it answered (nil: nothing)
}

func (c *claimTransport) event(e string) {
	c.mu.Lock()
	c.log = append(c.log, e)
	c.mu.Unlock()
}

func (c *claimTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_ = req.Body.Close()
	if c.writeErr != nil {
		c.event("failed unwritten")
		return nil, c.writeErr
	}
	if written := model.RequestWritten(req.Context()); written != nil && c.signal {
		c.event("written")
		written()
	}
	if c.waitFor != nil {
		select {
		case err := <-c.waitFor:
			if err != nil {
				return nil, err
			}
		case <-req.Context().Done():
			c.event("timed out")
			return nil, req.Context().Err()
		}
	}
	if c.answerErr != nil {
		c.event("failed answer")
		return nil, c.answerErr
	}
	c.event("answered")
	if c.answered != nil {
		c.answered()
	}
	return &http.Response{StatusCode: http.StatusNoContent, Body: io.NopCloser(strings.NewReader(""))}, nil
}

// TestClaimRecorded: the warm claim's record (the control plane's commit
// of the sandbox's row) runs only once the state file is written and the
// claim's request is in the sidecar's socket: at the transport's signal
// that it wrote it, while the answer is still to come (the overlap), or
// after the answer from a transport that gives no signal; never while the
// request may still be lost with this process, nor after a claim that
// failed first.
func TestClaimRecorded(t *testing.T) {
	t.Parallel()
	refused := errors.New("sidecar gone")
	for _, tt := range []struct {
		name     string
		tr       *claimTransport
		stateErr error
		wantLog  []string
		wantErr  error
	}{
		{
			name: "overlap: the answer waits for the record",
			tr:   &claimTransport{signal: true, waitFor: make(chan error, 1)},
			// the record releases the answer (below): a record held back
			// until the answer would see the claim time out instead
			wantLog: []string{"state", "written", "record", "answered"},
		},
		{
			name:    "no signal: after the answer",
			tr:      &claimTransport{},
			wantLog: []string{"state", "answered", "record"},
		},
		{
			name:     "state file failed: no record",
			tr:       &claimTransport{signal: true},
			stateErr: errors.New("disk full"),
			wantLog:  []string{"state", "written", "answered"},
			wantErr:  errors.New("disk full"),
		},
		{
			name:    "failed before written: no record",
			tr:      &claimTransport{signal: true, writeErr: refused},
			wantLog: []string{"state", "failed unwritten"},
			wantErr: refused,
		},
		{
			name:    "failed after written: recorded, and the error",
			tr:      &claimTransport{signal: true, waitFor: make(chan error, 1), answerErr: refused},
			wantLog: []string{"state", "written", "record", "failed answer"},
			wantErr: refused,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			state := make(chan error, 1)
			// The state file is written first here, so that the log's
			// order is fixed; TestClaimRecordedWaitsForState has it last.
			tt.tr.event("state")
			state <- tt.stateErr
			record := func() {
				tt.tr.event("record")
				if tt.tr.waitFor != nil {
					tt.tr.waitFor <- nil
				}
			}
			err := claimRecorded(t.Context(), &http.Client{Transport: tt.tr}, "pool", "token", state, record)
			if (err == nil) != (tt.wantErr == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr.Error())) {
				t.Errorf("claimRecorded = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantLog, tt.tr.log); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaimRecordedWaitsForState: a claim written and answered before the
// state file is runs its record only after the state file is written
// (the restart reads the endpoint from it).
func TestClaimRecordedWaitsForState(t *testing.T) {
	t.Parallel()
	answered := make(chan struct{})
	tr := &claimTransport{signal: true, answered: func() { close(answered) }}
	state := make(chan error)
	go func() {
		<-answered
		tr.event("state")
		state <- nil
	}()
	if err := claimRecorded(t.Context(), &http.Client{Transport: tr}, "pool", "token", state, func() { tr.event("record") }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"written", "answered", "state", "record"}, tr.log); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
