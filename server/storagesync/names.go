package storagesync

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// A workspace path is not stored under its own name: the stores fold or
// refuse some of the characters a Linux file name may hold. Azure (the
// service and Azurite) and SeaweedFS's S3 read a '\' as a '/', so a file
// "a\b" was stored over the file "a/b"; GCS refuses a CR or LF, and all
// three take only UTF-8; control characters break Azure's XML listing of
// the whole prefix (Azurite answered 500) and are XML 1.0 trouble for S3
// and GCS too. So a path's '%', '\', control characters (C0, DEL, C1),
// U+FFFE and U+FFFF and every byte of invalid UTF-8 are stored as %XX, on
// every backend alike (one bucket can be copied to another store), and
// every name maps back to the one path it came from.
//
// Sandboxes synced before that stored paths as they were, and such a name
// holding "%41" must not read as "A": the prefix of a sandbox whose names
// are escaped holds NamesMarker, written before any escaped name. A prefix
// without it is read as it was written (names as stored), and the first
// flush of a running sandbox moves it over (adopt). docs/storage.md.

// NamesMarker is the object, directly under a sandbox's prefix, that says
// the prefix's other names are escaped (ObjectName). No ObjectName is
// this name: ObjectName follows a '%' with two hex digits.
const NamesMarker = "%boxkite-names-v2"

// namesMarkerBody is the marker's content, for an operator who opens it.
const namesMarkerBody = "boxkite: the names of this sandbox's objects escape a path's %, \\, control characters and bytes of invalid UTF-8 as %XX (docs/storage.md)\n"

// escapes reports whether ObjectName stores r as %XX.
func escapes(r rune) bool {
	return r == '%' || r == '\\' || r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0xfffe || r == 0xffff
}

// ObjectName is the name, under its sandbox's prefix, of the object that
// holds the workspace path rel.
func ObjectName(rel string) string {
	var b strings.Builder
	b.Grow(len(rel))
	for i := 0; i < len(rel); {
		r, n := utf8.DecodeRuneInString(rel[i:])
		if r == utf8.RuneError && n == 1 || escapes(r) {
			for _, c := range []byte(rel[i : i+n]) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		} else {
			b.WriteString(rel[i : i+n])
		}
		i += n
	}
	return b.String()
}

// WorkspacePath is the workspace path an object name holds (ObjectName
// reversed); false for a name ObjectName never gives (the marker, a name
// stored by something else) or one that is no stored path (StoredPath).
func WorkspacePath(name string) (string, bool) {
	if !strings.Contains(name, "%") {
		_, ok := StoredPath(name)
		return name, ok && ObjectName(name) == name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) || !isUpperHex(name[i+1]) || !isUpperHex(name[i+2]) {
			return "", false
		}
		b.WriteByte(unhex(name[i+1])<<4 | unhex(name[i+2]))
		i += 2
	}
	p := b.String()
	if _, ok := StoredPath(p); !ok || ObjectName(p) != name {
		return "", false
	}
	return p, true
}

func isUpperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}

// storedNames reads a listing of a sandbox's prefix (names under it, with
// their objects): each workspace path with its object, as the prefix was
// written (escaped names when it holds the marker, names as stored when
// not). Names that hold no workspace path are left out.
func storedNames(listed map[string]Object) map[string]Object {
	out := make(map[string]Object, len(listed))
	_, escaped := listed[NamesMarker]
	for name, o := range listed {
		p, ok := name, true
		if escaped {
			p, ok = WorkspacePath(name)
		} else {
			_, ok = StoredPath(name)
		}
		if ok {
			out[p] = o
		}
	}
	return out
}

// listPrefix lists a sandbox's prefix: every object by its name under it.
func (s *Service) listPrefix(ctx context.Context, accountID, sandboxID string) (map[string]Object, error) {
	prefix := s.prefixOf(accountID, sandboxID)
	listed := map[string]Object{}
	if err := s.d.Backend.List(ctx, prefix, func(o Object) error {
		listed[strings.TrimPrefix(o.Key, prefix)] = o
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list the stored files: %w", err)
	}
	return listed, nil
}

// escapedHere reports whether this server's flush of the sandbox wrote or
// found its prefix's marker. Only a flush (adopt, under the sandbox's
// flush lock) notes it, so a reader's listing never races a deletion of
// the marker into a stale note.
func (s *Service) escapedHere(sandboxID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[sandboxID]
}

func (s *Service) noteEscaped(sandboxID string) {
	s.mu.Lock()
	s.names[sandboxID] = true
	s.mu.Unlock()
}

// forgetNames drops what this server knows of the sandbox's marker: its
// objects were deleted (DELETE …/storage, retention), or the bucket was.
func (s *Service) forgetNames(sandboxID string) {
	s.mu.Lock()
	delete(s.names, sandboxID)
	s.mu.Unlock()
}

// ensureNames makes sure the sandbox's prefix holds the marker before a
// flush writes into it.
func (s *Service) ensureNames(ctx context.Context, st *State) error {
	if s.escapedHere(st.SandboxID) {
		return nil
	}
	_, err := s.adopt(ctx, st)
	return err
}

// adopt lists the sandbox's prefix, moves a prefix written before names
// were escaped over to escaped names, and returns what it holds by
// workspace path. The objects of such a prefix whose names ObjectName
// would change are deleted, and forgotten from the index so that the
// flush stores them again under their escaped names, before the marker
// is written: no prefix with the marker holds a name not escaped. A '\'
// in a path a folding store stored as '/' had its object land on its
// twin's name: both are forgotten, and stored again. Runs under the
// sandbox's flush lock.
func (s *Service) adopt(ctx context.Context, st *State) (map[string]Object, error) {
	listed, err := s.listPrefix(ctx, st.AccountID, st.SandboxID)
	if err != nil {
		return nil, err
	}
	if _, ok := listed[NamesMarker]; ok {
		s.noteEscaped(st.SandboxID)
		return storedNames(listed), nil
	}
	prefix := s.prefixOf(st.AccountID, st.SandboxID)
	var stale []string
	for name := range listed {
		if ObjectName(name) == name {
			continue
		}
		if err := s.d.Backend.Delete(ctx, prefix+name); err != nil {
			return nil, fmt.Errorf("move stored names over: %w", err)
		}
		delete(listed, name)
		stale = append(stale, name)
	}
	known, err := s.d.Store.SyncedFiles(ctx, st.SandboxID)
	if err != nil {
		return nil, fmt.Errorf("load the stored files: %w", err)
	}
	for p := range known {
		if ObjectName(p) != p {
			stale = append(stale, p, strings.ReplaceAll(p, `\`, "/"))
		}
	}
	slices.Sort(stale)
	stale = slices.Compact(stale)
	if len(stale) > 0 {
		if err := s.d.Store.DeleteSynced(ctx, st.SandboxID, stale...); err != nil {
			return nil, fmt.Errorf("forget stored names: %w", err)
		}
		for _, p := range stale {
			delete(listed, p)
		}
		s.mu.Lock()
		if tr, ok := s.tracks[st.SandboxID]; ok {
			tr.token = "" // the next reconcile walks in full and finds them
		}
		s.mu.Unlock()
		s.d.Log.InfoContext(ctx, "stored files with names to escape are stored again", "sandbox", st.SandboxID, "files", len(stale))
	}
	body := strings.NewReader(namesMarkerBody)
	if err := s.d.Backend.Put(ctx, prefix+NamesMarker, body, body.Size()); err != nil {
		return nil, fmt.Errorf("mark the stored names: %w", err)
	}
	s.noteEscaped(st.SandboxID)
	return storedNames(listed), nil
}

// objectKey is the key of the object that holds rel, in a prefix written
// as escaped is: true for escaped names, false for names as stored.
func (s *Service) objectKey(accountID, sandboxID, rel string, escaped bool) string {
	if escaped {
		rel = ObjectName(rel)
	}
	return s.prefixOf(accountID, sandboxID) + rel
}

// namesOf reports whether a sandbox's prefix holds escaped names: known
// from this server's flushes, or else from one listing of the marker's
// name (a destroyed sandbox's download).
func (s *Service) namesOf(ctx context.Context, accountID, sandboxID string) (bool, error) {
	if s.escapedHere(sandboxID) {
		return true, nil
	}
	key := s.prefixOf(accountID, sandboxID) + NamesMarker
	found := false
	if err := s.d.Backend.List(ctx, key, func(o Object) error {
		found = found || o.Key == key
		return nil
	}); err != nil {
		return false, fmt.Errorf("list the stored files: %w", err)
	}
	return found, nil
}
