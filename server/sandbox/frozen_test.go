package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestFrozenAnswerNamesItsCause: a sandbox the storage watch froze answers
// 507 insufficient_storage naming what ran out: the host's filesystem, or
// the clone pool that holds the sandboxes' disks (before, a pool freeze
// said "the host ran out of disk space", on a host with room to spare).
func TestFrozenAnswerNamesItsCause(t *testing.T) {
	since := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name       string
		pool       bool
		msg, hint  string
		notMessage string
	}{
		{name: "host", msg: "the host ran out of disk space", hint: "free space on the host", notMessage: "clone pool"},
		{name: "clone pool", pool: true, msg: "the clone pool that holds the sandboxes' disks ran out of space", hint: "free space in the clone pool", notMessage: "host ran out"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Service{}
			if s.FrozenAnswer("sb1") != nil {
				t.Fatal("a sandbox not frozen answered")
			}
			s.frozen.set("sb1", true, tt.pool, since)
			ae, ok := s.FrozenAnswer("sb1").(*api.Error)
			if !ok || ae.Status != 507 || ae.Code != api.CodeInsufficientStorage {
				t.Fatalf("got %#v, want a 507 insufficient_storage", s.FrozenAnswer("sb1"))
			}
			if !strings.Contains(ae.Message, tt.msg) || strings.Contains(ae.Message, tt.notMessage) || !strings.HasPrefix(ae.Hint, tt.hint) {
				t.Errorf("message %q, hint %q; want %q in the message (not %q), the hint starting %q", ae.Message, ae.Hint, tt.msg, tt.notMessage, tt.hint)
			}
			d, _ := ae.Details.(map[string]any)
			if d["clone_pool"] != tt.pool || d["since"] != since {
				t.Errorf("details %v, want clone_pool %v since %v", d, tt.pool, since)
			}
			s.frozen.set("sb1", false, false, time.Time{})
			if s.FrozenAnswer("sb1") != nil {
				t.Error("a thawed sandbox still answered 507")
			}
		})
	}
}

// TestFrozenReason: the sandbox resource and its stats say why a sandbox
// is frozen, with the stable values clients branch on: before, both had
// only frozen: true, and the TUI said "the host ran out of disk space"
// also when the clone pool had.
func TestFrozenReason(t *testing.T) {
	for _, tt := range []struct {
		name   string
		frozen bool
		pool   bool
		stats  model.Stats // what the driver reports
		want   string
	}{
		{name: "not frozen", stats: model.Stats{}, want: ""},
		{name: "host", frozen: true, stats: model.Stats{Frozen: true, FrozenReason: api.FrozenHostDisk}, want: api.FrozenHostDisk},
		{name: "clone pool", frozen: true, pool: true, stats: model.Stats{Frozen: true, FrozenReason: api.FrozenClonePool}, want: api.FrozenClonePool},
		// A driver that does not say meant the host's disk, as frozen did.
		{name: "driver without a reason", frozen: true, stats: model.Stats{Frozen: true}, want: api.FrozenHostDisk},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Service{}
			if tt.frozen {
				s.frozen.set("sb1", true, tt.pool, time.Now())
			}
			sb := &model.Sandbox{ID: "sb1", Status: api.StatusActive}
			if got := s.apiSandbox(sb).FrozenReason; got != tt.want {
				t.Errorf("sandbox frozen_reason = %q, want %q", got, tt.want)
			}
			if got := statsAnswer(tt.stats); got.FrozenReason != tt.want || got.Frozen != (tt.want != "") {
				t.Errorf("stats frozen %v, frozen_reason %q; want %v, %q", got.Frozen, got.FrozenReason, tt.want != "", tt.want)
			}
		})
	}
	// A sandbox no longer active is not frozen, whatever was recorded.
	s := &Service{}
	s.frozen.set("sb1", true, true, time.Now())
	if got := s.apiSandbox(&model.Sandbox{ID: "sb1", Status: api.StatusDestroyed}).FrozenReason; got != "" {
		t.Errorf("a deleted sandbox's frozen_reason = %q, want none", got)
	}
}
