package sidecar

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"syscall"

	"github.com/boxkite/boxkite/client/api"
)

// execSignals are the signals POST /exec/{exec_id}/signal sends.
var execSignals = map[string]syscall.Signal{
	api.SignalINT: syscall.SIGINT, api.SignalTERM: syscall.SIGTERM,
	api.SignalHUP: syscall.SIGHUP, api.SignalKILL: syscall.SIGKILL,
}

// execTable holds the streamed execs that run, by the id their answer's
// api.HeaderExecID names, so a client that keeps reading the stream can
// send the command a signal (`boxkite exec` and Ctrl-C): the command then
// ends its own way and the stream tells its exit code.
type execTable struct {
	mu sync.Mutex
	m  map[string]*runningExec
}

// runningExec is one streamed exec's process group: 0 until it started,
// and once it ended (its group may be gone, its number another's).
type runningExec struct {
	mu   sync.Mutex
	pgid int
}

func (r *runningExec) started(pgid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pgid = pgid
}

func (r *runningExec) ended() { r.started(0) }

// signal sends sig to the group while the command runs.
func (r *runningExec) signal(sig syscall.Signal) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pgid > 0 && syscall.Kill(-r.pgid, sig) == nil
}

func (t *execTable) add() (string, *runningExec) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	r := &runningExec{}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*runningExec{}
	}
	t.m[id] = r
	return id, r
}

func (t *execTable) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, id)
}

func (t *execTable) get(id string) *runningExec {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// execSignal serves POST /exec/{exec_id}/signal: the signal goes to the
// command's process group, as a terminal's Ctrl-C goes to its foreground
// group; 404 once the command ended (or before it started).
func (h *Handler) execSignal(w http.ResponseWriter, r *http.Request) error {
	var req api.ExecSignalRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	sig, ok := execSignals[req.Signal]
	if !ok {
		return api.Invalid("signal", fmt.Sprintf("signal must be SIGINT, SIGTERM, SIGHUP or SIGKILL, got %q", req.Signal), "")
	}
	id := r.PathValue("exec_id")
	if e := h.execs.get(id); e == nil || !e.signal(sig) {
		return &api.Error{
			Status: http.StatusNotFound, Code: api.CodeNotFound,
			Message: fmt.Sprintf("no running exec %q in this sandbox", id),
			Hint:    "the command has ended (its stream has its exit code), or the id is not one this sandbox's exec stream named",
		}
	}
	return writeJSON(w, http.StatusOK, api.ExecSignalResult{ExecID: id, Signal: req.Signal})
}
