package snapshot

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// memStore is a model.SnapshotStore in memory.
type memStore struct {
	mu    sync.Mutex
	rows  map[string]*model.Snapshot
	drops map[string]time.Time // key: the drop's lease
	inst  *memInstances        // FinishSnapshot's fence; nil: none
}

// memInstances is a model.InstanceStore in memory.
type memInstances struct {
	mu    sync.Mutex
	until map[string]time.Time
	token map[string]int64
}

// beat renews id's heartbeat until until at time.Unix(0, 0) (the keys
// env's now) under its token: a new one for a new instance or after a
// lapse.
func (m *memInstances) beat(id string, until time.Time) {
	m.mu.Lock()
	token := m.token[id]
	m.mu.Unlock()
	_, _ = m.BeatInstance(context.Background(), id, token, time.Unix(0, 0), until)
}

// lapse ends id's heartbeat at time.Unix(0, 0) (the keys env's now).
func (m *memInstances) lapse(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.until[id] = time.Unix(0, 0)
}

// tokenOf is id's lease token, 0 for none.
func (m *memInstances) tokenOf(id string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token[id]
}

func (m *memInstances) BeatInstance(_ context.Context, id string, token int64, now, until time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.until == nil {
		m.until, m.token = map[string]time.Time{}, map[string]int64{}
	}
	cur, ok := m.token[id]
	got := cur
	switch {
	case !ok:
		got = token + 1
	case cur != token || !m.until[id].After(now):
		got = max(cur, token) + 1
	}
	m.until[id], m.token[id] = until, got
	return got, nil
}

func (m *memInstances) EndInstance(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.until, id)
	delete(m.token, id)
	return nil
}

func (m *memInstances) LiveInstances(_ context.Context, now time.Time) (map[string]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := map[string]int64{}
	for id, until := range m.until {
		if until.After(now) {
			live[id] = m.token[id]
		}
	}
	return live, nil
}

func (m *memInstances) ForgetInstances(context.Context, time.Time) error { return nil }

func (m *memStore) ReserveSnapshot(_ context.Context, sn *model.Snapshot, limit int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.rows {
		if r.AccountID == sn.AccountID && r.DeletedAt == nil && r.Status != api.SnapshotFailed {
			n++
		}
	}
	if limit > 0 && n >= limit {
		return &model.SnapshotLimitError{Limit: limit, Count: n}
	}
	c := *sn
	m.rows[sn.ID] = &c
	return nil
}

func (m *memStore) Snapshot(_ context.Context, accountID, id string) (*model.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok || r.AccountID != accountID || r.DeletedAt != nil {
		return nil, model.ErrNotFound
	}
	c := *r
	return &c, nil
}

func (m *memStore) ListSnapshots(context.Context, string, string) ([]*model.Snapshot, error) {
	return nil, nil
}

func (m *memStore) UpdateSnapshot(_ context.Context, id string, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok {
		return nil, model.ErrNotFound
	}
	if err := fn(r); err != nil {
		return nil, err
	}
	c := *r
	return &c, nil
}

func (m *memStore) FinishSnapshot(ctx context.Context, id string, now time.Time, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	m.mu.Lock()
	r, ok := m.rows[id]
	var owner string
	var token int64
	if ok {
		owner, token = r.Owner, r.OwnerToken
	}
	m.mu.Unlock()
	if ok && token > 0 && m.inst != nil {
		live, _ := m.inst.LiveInstances(ctx, now)
		if got, alive := live[owner]; !alive || got != token {
			return nil, model.ErrOwnerLeaseLost
		}
	}
	return m.UpdateSnapshot(ctx, id, fn)
}

func (m *memStore) SnapshotsWithStatus(_ context.Context, status string) ([]*model.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*model.Snapshot
	for _, r := range m.rows {
		if r.Status == status && r.DeletedAt == nil {
			c := *r
			out = append(out, &c)
		}
	}
	return out, nil
}

func (m *memStore) ClaimSnapshotKey(_ context.Context, id, key string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if until, ok := m.drops[key]; ok && until.After(now) {
		return model.ErrSnapshotKeyDropping
	}
	r, ok := m.rows[id]
	if !ok || r.Status != api.SnapshotPending || r.DeletedAt != nil {
		return model.ErrNotFound
	}
	r.Key = key
	return nil
}

func (m *memStore) BeginSnapshotDrop(_ context.Context, key string, now, until time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.rows {
		if r.Key == key && r.DeletedAt == nil {
			return false, nil
		}
	}
	if u, ok := m.drops[key]; ok && u.After(now) {
		return false, nil
	}
	if m.drops == nil {
		m.drops = map[string]time.Time{}
	}
	m.drops[key] = until
	return true, nil
}

func (m *memStore) EndSnapshotDrop(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.drops, key)
	return nil
}

func (m *memStore) SandboxImageID(context.Context, string) (string, error) { return "", nil }

// fakeDriver hands out the same key for every snapshot (identical state)
// unless failing; stored is its store's directory (the keys it holds),
// which services in a test may share as replicas share theirs.
type fakeDriver struct {
	mu      sync.Mutex
	fail    bool
	stored  map[string]bool
	deleted []string
	// kept, when set, runs in a snapshot's copy once it claimed its key
	// and found it stored already (it keeps the stored data).
	kept func()
	// deleting, when set, runs in DeleteSnapshot before the data goes.
	deleting func()
	// claimed, when set, runs in a snapshot's copy once it claimed its
	// key.
	claimed func()
}

func (d *fakeDriver) Snapshot(_ context.Context, _ string, transient bool, claim func(string) error) (model.SnapshotRef, error) {
	if d.fail {
		return model.SnapshotRef{}, errors.New("disk on fire")
	}
	if transient {
		return model.SnapshotRef{Key: "tmp-1", Method: "reflink"}, nil
	}
	const key = "sha256-same"
	if claim != nil {
		if err := claim(key); err != nil {
			return model.SnapshotRef{}, err
		}
		if d.claimed != nil {
			d.claimed()
		}
	}
	d.mu.Lock()
	if d.stored == nil {
		d.stored = map[string]bool{}
	}
	kept := d.stored[key]
	d.stored[key] = true
	d.mu.Unlock()
	if kept && d.kept != nil {
		d.kept()
	}
	return model.SnapshotRef{Key: key, SizeBytes: 7, Method: "reflink"}, nil
}

func (d *fakeDriver) DeleteSnapshot(_ context.Context, key string) error {
	if d.deleting != nil {
		d.deleting()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deleted = append(d.deleted, key)
	delete(d.stored, key)
	return nil
}

// has reports whether the driver's store holds key.
func (d *fakeDriver) has(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stored[key]
}

type fakeControl struct{ audits []string }

func (c *fakeControl) Account(*http.Request) *model.Account { return nil }
func (c *fakeControl) Sandbox(context.Context, string, string) (*model.Sandbox, error) {
	return nil, errors.New("unused")
}

func (c *fakeControl) Start(_ context.Context, _ *model.Account, from *model.Snapshot, _ string, count int) ([]*model.Sandbox, error) {
	out := make([]*model.Sandbox, count)
	for i := range out {
		out[i] = &model.Sandbox{ID: from.Key + "-child"}
	}
	return out, nil
}

func (c *fakeControl) Hold(_ context.Context, accountID, id string) (*model.Sandbox, func(), error) {
	return &model.Sandbox{ID: id, AccountID: accountID, Status: api.StatusActive}, func() {}, nil
}

func (c *fakeControl) Grants(context.Context, *model.Sandbox) (model.Grants, error) {
	return model.Grants{}, nil
}

func (c *fakeControl) Audit(_ context.Context, _ *model.Sandbox, op string, _ map[string]any) {
	c.audits = append(c.audits, op)
}

// TestTakeLimitsAndSharing: snapshots are completed with the driver's
// key, the limit answers 429 snapshot_limit_reached, a failed copy is
// recorded failed and does not count, data shared by two snapshots is
// deleted with the last of them, and a restart fails what was pending.
func TestTakeLimitsAndSharing(t *testing.T) {
	ctx := context.Background()
	st := &memStore{rows: map[string]*model.Snapshot{}}
	d := &fakeDriver{}
	ctl := &fakeControl{}
	s := New(Config{Store: st, Driver: d, Control: ctl, Limit: 2, Now: func() time.Time { return time.Unix(0, 0) }})
	acct := &model.Account{ID: "a"}
	sb := &model.Sandbox{ID: "sb", AccountID: "a", Status: api.StatusActive}

	first, err := s.Take(ctx, acct, sb, "one")
	if err != nil || first.Status != api.SnapshotCompleted || first.Key != "sha256-same" {
		t.Fatalf("Take = %+v, %v", first, err)
	}
	d.fail = true
	if _, err := s.Take(ctx, acct, sb, ""); err == nil {
		t.Fatal("a failed copy answered no error")
	}
	d.fail = false
	second, err := s.Take(ctx, acct, sb, "two")
	if err != nil {
		t.Fatalf("a second snapshot (the failed one does not count): %v", err)
	}
	_, err = s.Take(ctx, acct, sb, "three")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeSnapshotLimitReached || ae.Status != http.StatusTooManyRequests {
		t.Errorf("a third snapshot under a limit of 2: %v", err)
	}

	// Both hold "sha256-same": the data goes with the last.
	for i, sn := range []*model.Snapshot{first, second} {
		now := time.Unix(1, 0)
		if _, err := st.UpdateSnapshot(ctx, sn.ID, func(sn *model.Snapshot) error { sn.DeletedAt = &now; return nil }); err != nil {
			t.Fatal(err)
		}
		s.dropData(ctx, sn.Key)
		want := []string(nil)
		if i == 1 {
			want = []string{"sha256-same"}
		}
		if !slices.Equal(d.deleted, want) {
			t.Errorf("after deleting %d of 2 sharing a key, the driver deleted %v, want %v", i+1, d.deleted, want)
		}
	}

	// A fork's transient snapshot is deleted after the children started.
	children, err := s.Fork(ctx, acct, sb, 3)
	if err != nil || len(children) != 3 {
		t.Fatalf("Fork = %v, %v", children, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		d.mu.Lock()
		done := slices.Contains(d.deleted, "tmp-1")
		d.mu.Unlock()
		if done || time.Now().After(deadline) {
			if !done {
				t.Error("the fork's transient snapshot was not deleted")
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !slices.Contains(ctl.audits, "sandbox_forked") || !slices.Contains(ctl.audits, "snapshot_created") {
		t.Errorf("audited %v", ctl.audits)
	}

	// A snapshot left pending by a crash is failed at start-up.
	pending := &model.Snapshot{ID: "p", AccountID: "b", Status: api.SnapshotPending}
	if err := st.ReserveSnapshot(ctx, pending, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(ctx, "b", "p"); got.Status != api.SnapshotFailed {
		t.Errorf("pending after Reconcile: %s, want failed", got.Status)
	}
}
