//go:build linux

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// canonicalMark, a file in a volume's directory (StateDir/volumes/<id>,
// the host's side, out of every jail's reach), says the volume's data
// holds canonical ids: the ids its sandboxes see, 1001 for the sandbox
// user. A volume made before per-sandbox id ranges lacks it: its files
// belong to the one range every jail shared then (Config.LegacyIDBase+n).
const canonicalMark = "canonical-ids"

// markCanonical records that the volume in dir holds canonical ids.
func markCanonical(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, canonicalMark), []byte("1\n"), 0o600); err != nil {
		return fmt.Errorf("mark volume: %w", err)
	}
	return nil
}

// ensureCanonical moves the files of a volume made before per-sandbox id
// ranges from the legacy range to canonical ids, once, before a sandbox
// mounts it. The caller holds volMu. A sandbox that was started before the
// upgrade, still runs and has the volume mounted sees the moved files as
// owned by nobody until it is recreated.
func (d *Driver) ensureCanonical(id string) error {
	if !d.root {
		return nil // no idmapped mounts: the data is the caller's
	}
	dir := d.volumeDir(id)
	if _, err := os.Lstat(filepath.Join(dir, canonicalMark)); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mount volume %s: %w", id, err)
	}
	n, err := shiftIDs(d.volumeDataDir(id), d.cfg.LegacyIDBase)
	if err != nil {
		return fmt.Errorf("mount volume %s: move to canonical ids: %w", id, err)
	}
	d.log.Info("volume moved from the legacy id range to canonical ids", "volume", id, "files", n)
	return markCanonical(dir)
}

// shiftIDs walks the tree at root and moves every uid and gid in
// [base, base+jail.IDRange) to its offset from base, returning how many
// entries it changed. The tree is a sandbox's: the walk stays beneath
// root and never follows a symbolic link (os.Root, lchown), and ids
// outside the range are left alone, so running it twice changes nothing.
// As chown(2) does, it clears set-user-ID and set-group-ID bits of the
// files it changes.
func shiftIDs(root string, base int) (int, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	shift := func(id uint32) int {
		if int(id) >= base && int(id) < base+jail.IDRange {
			return int(id) - base
		}
		return int(id)
	}
	n := 0
	err = fs.WalkDir(r.FS(), ".", func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := r.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("stat %s: no ownership", p)
		}
		uid, gid := shift(st.Uid), shift(st.Gid)
		if uid == int(st.Uid) && gid == int(st.Gid) {
			return nil
		}
		if err := r.Lchown(p, uid, gid); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
