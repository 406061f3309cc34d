//go:build unix && !linux

package sidecar

import "errors"

// jwatch needs Linux inotify; sandboxes only run on Linux, and the journal
// elsewhere answers every question with a full walk.
type jwatch struct{}

func (*jwatch) watched() int { return 0 }

func journalStateOf(error) string { return journalUnsupported }

func newInotify() (int, error) { return -1, errors.New("no inotify") }

func (j *journal) startLocked(*fsView, *cursor) error { return errors.New("no inotify") }

func (j *journal) stopLocked(state string) { j.w, j.state = nil, state; j.forget() }

func (j *journal) drainLocked() {}

func (j *journal) addLocked(string, int) bool { return false }
