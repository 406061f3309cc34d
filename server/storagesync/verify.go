package storagesync

import (
	"context"
	"fmt"
)

// The index of stored files (Store.SyncedFiles) is what a flush compares
// the workspace with: a file the index holds unchanged is not uploaded
// again. A bucket emptied, recreated or cleaned up behind the sync leaves
// the index claiming objects that are gone, and nothing would refill them
// until their files change. So a forced flush, and the first flush of
// each sandbox by this server after its start, list the sandbox's prefix
// first and forget the files whose object is gone (or is another size
// than the one stored): the flush then uploads them again. The periodic
// flush trusts the index (a listing per reconcile would cost more than
// the reconcile).

// verify forgets from the sandbox's index each file whose object is no
// longer in the bucket, or is another size than the version recorded, and
// returns how many. It reads the index before it lists: a file recorded
// has its object stored first, so only an object gone since is missed.
func (s *Service) verify(ctx context.Context, st *State) (int, error) {
	known, err := s.d.Store.SyncedFiles(ctx, st.SandboxID)
	if err != nil {
		return 0, fmt.Errorf("load the stored files: %w", err)
	}
	if s.escapedHere(st.SandboxID) && len(known) == 0 {
		s.markVerified(st.SandboxID)
		return 0, nil
	}
	// The listing also moves a prefix written before names were escaped
	// over (names.go): the files it forgets are not listed, so gone here.
	listed, err := s.adopt(ctx, st)
	if err != nil {
		return 0, err
	}
	var gone []string
	for p, f := range known {
		if o, ok := listed[p]; !ok || o.Size != f.Size {
			gone = append(gone, p)
		}
	}
	if len(gone) > 0 {
		if err := s.d.Store.DeleteSynced(ctx, st.SandboxID, gone...); err != nil {
			return 0, fmt.Errorf("forget files gone from the bucket: %w", err)
		}
		s.d.Log.WarnContext(ctx, "stored files missing from the bucket; uploading them again", "sandbox", st.SandboxID, "missing", len(gone), "recorded", len(known))
	}
	s.mu.Lock()
	if tr, ok := s.tracks[st.SandboxID]; ok && len(gone) > 0 {
		tr.token = "" // the next reconcile walks in full and finds them
	}
	s.mu.Unlock()
	s.markVerified(st.SandboxID)
	return len(gone), nil
}

// markVerified notes that the sandbox's index was checked against the
// bucket by this server (or needs no check: it was created here).
func (s *Service) markVerified(id string) {
	s.mu.Lock()
	s.verified[id] = true
	s.mu.Unlock()
}

// needsVerify reports whether this server has not yet checked the
// sandbox's index against the bucket since it started.
func (s *Service) needsVerify(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.verified[id]
}
