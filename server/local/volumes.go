//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

var _ model.VolumeDriver = (*Driver)(nil)

// Files of a volume, in StateDir/volumes/<id>. With loop storage the
// volume is a sparse ext4 image of its size, mounted on the host at mnt
// from creation until deletion (so sandboxes sharing it share one
// filesystem), and sandboxes bind mnt/data. Without loop storage it is a
// plain directory, data, with no quota.
const (
	volumeImage = "volume.img"
	volumeMount = "mnt"
	volumeData  = "data"
)

func (d *Driver) volumesDir() string { return filepath.Join(d.cfg.StateDir, "volumes") }

func (d *Driver) volumeDir(id string) string { return filepath.Join(d.volumesDir(), id) }

// volumeDataDir is the host directory sandboxes bind for the volume.
func (d *Driver) volumeDataDir(id string) string {
	if d.images == nil {
		return filepath.Join(d.volumeDir(id), volumeData)
	}
	return filepath.Join(d.volumeDir(id), volumeMount, volumeData)
}

// CreateVolume implements model.VolumeDriver.
func (d *Driver) CreateVolume(_ context.Context, id string, size int64) (err error) {
	if !validID.MatchString(id) {
		return fmt.Errorf("create volume: invalid id %q", id)
	}
	d.volMu.Lock()
	defer d.volMu.Unlock()
	dir := d.volumeDir(id)
	if err := os.MkdirAll(d.volumesDir(), 0o700); err != nil {
		return fmt.Errorf("create volume %s: %w", id, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("create volume %s: %w", id, err)
	}
	defer func() {
		if err != nil {
			_ = d.deleteVolume(id)
		}
	}()
	if d.images == nil {
		d.log.Warn("volume has no size quota: loop-mounted storage is unavailable", "volume", id)
	} else {
		if err := d.images.Create(filepath.Join(dir, volumeImage), size); err != nil {
			return fmt.Errorf("create volume %s: %w", id, err)
		}
		if err := loopdisk.Mount(filepath.Join(dir, volumeImage), filepath.Join(dir, volumeMount)); err != nil {
			return fmt.Errorf("create volume %s: %w", id, err)
		}
	}
	// The directories above data are the host root's; data is the sandbox
	// user's, whichever sandbox mounts it: owned by its canonical id,
	// which each jail sees as its own range's through an idmapped mount.
	if err := d.makeDir(d.volumeDataDir(id), 0o755, jail.DefaultUID); err != nil {
		return fmt.Errorf("create volume %s: %w", id, err)
	}
	return markCanonical(dir)
}

// DeleteVolume implements model.VolumeDriver.
func (d *Driver) DeleteVolume(_ context.Context, id string) error {
	if !validID.MatchString(id) {
		return nil
	}
	d.volMu.Lock()
	defer d.volMu.Unlock()
	if err := d.deleteVolume(id); err != nil {
		return fmt.Errorf("delete volume %s: %w", id, err)
	}
	return nil
}

func (d *Driver) deleteVolume(id string) error {
	dir := d.volumeDir(id)
	loop := loopdisk.LoopDevice(filepath.Join(dir, volumeMount))
	if err := loopdisk.Unmount(filepath.Join(dir, volumeMount)); err != nil {
		return err
	}
	if d.images != nil {
		if err := d.images.Discard(filepath.Join(dir, volumeImage), loop); err != nil {
			return err
		}
	}
	return removeAll(dir)
}

// volumeBinds returns the jail binds of a sandbox's volumes, mounting any
// volume whose host mount is gone (a reboot since it was made).
func (d *Driver) volumeBinds(mounts []model.VolumeMount) ([]jail.Bind, error) {
	if len(mounts) == 0 {
		return nil, nil
	}
	d.volMu.Lock()
	defer d.volMu.Unlock()
	binds := make([]jail.Bind, 0, len(mounts))
	for _, m := range mounts {
		if !validID.MatchString(m.ID) {
			return nil, fmt.Errorf("mount volume: invalid id %q", m.ID)
		}
		if err := d.ensureVolumeMounted(m.ID); err != nil {
			return nil, err
		}
		if err := d.ensureCanonical(m.ID); err != nil {
			return nil, err
		}
		binds = append(binds, jail.Bind{Source: d.volumeDataDir(m.ID), Target: m.Path})
	}
	return binds, nil
}

func (d *Driver) ensureVolumeMounted(id string) error {
	if d.images == nil {
		if _, err := os.Stat(d.volumeDataDir(id)); err != nil {
			return fmt.Errorf("mount volume %s: %w", id, err)
		}
		return nil
	}
	dir := d.volumeDir(id)
	mnt := filepath.Join(dir, volumeMount)
	mounted, err := loopdisk.IsMountPoint(mnt)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mount volume %s: %w", id, err)
	}
	if mounted {
		return nil
	}
	if err := loopdisk.Mount(filepath.Join(dir, volumeImage), mnt); err != nil {
		return fmt.Errorf("mount volume %s: %w", id, err)
	}
	return nil
}

// unmountVolumes unmounts every volume's filesystem from the host, which
// frees their loop devices; their images stay, and a sandbox that mounts
// a volume later mounts it again (ensureVolumeMounted). Shutdown calls it
// once the sandboxes are gone, so `boxkite down` leaves no mount behind.
func (d *Driver) unmountVolumes() error {
	if d.images == nil {
		return nil // plain directories: nothing is mounted
	}
	entries, err := os.ReadDir(d.volumesDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unmount volumes: %w", err)
	}
	d.volMu.Lock()
	defer d.volMu.Unlock()
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !validID.MatchString(e.Name()) {
			continue
		}
		if err := loopdisk.Unmount(filepath.Join(d.volumeDir(e.Name()), volumeMount)); err != nil {
			errs = append(errs, fmt.Errorf("unmount volume %s: %w", e.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// mountPoints returns the sandbox paths where st's jail binds volumes,
// which a snapshot of it records (model.SnapshotRef.MountPoints).
func mountPoints(st *state) []string {
	if st == nil || st.Jail == nil {
		return nil
	}
	var out []string
	for _, b := range st.Jail.Binds {
		out = append(out, b.Target)
	}
	return out
}

// clearMountPoints removes from workspace, a disk's /workspace restored
// from a snapshot, the mount points the snapshot's sandbox had for its
// volumes (model.Spec.MountPoints): directories its jail's root made,
// empty in the copy (a volume's data is not part of it), and the parents
// below /workspace the same root made that hold nothing else. The new
// sandbox mounts no volume there, and a fresh sandbox has no such
// directory, which the sandbox user could neither write nor remove. A
// directory that holds anything, or is not root's, stays; paths resolve
// beneath workspace only (os.Root), whatever links the copy holds.
func clearMountPoints(workspace string, paths []string) error {
	return clearDirsOf(workspace, paths, 0)
}

// clearDirsOf is clearMountPoints for directories owned by uid.
func clearDirsOf(workspace string, paths []string, uid uint32) error {
	if len(paths) == 0 {
		return nil
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return fmt.Errorf("clear mount points: %w", err)
	}
	defer root.Close()
	for _, p := range paths {
		rel, err := filepath.Rel(jail.WorkspaceDir, filepath.Clean(p))
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		for ; rel != "."; rel = filepath.Dir(rel) {
			fi, err := root.Lstat(rel)
			if err != nil || !fi.IsDir() {
				break
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
				break
			}
			if root.Remove(rel) != nil {
				break // not empty
			}
		}
	}
	return nil
}
