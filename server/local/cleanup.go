//go:build linux

package local

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// Cleaning up after a server (issue 19): `boxkite down` stops the server,
// whose shutdown deletes its sandboxes; then it runs Cleanup, which
// removes whatever a server that crashed, was killed or could not finish
// left of its state directory, whatever state the host is in, and lists
// what is still there with the command that removes it.

// A Leftover is something of a state directory still on the host after
// Cleanup, and how to remove it by hand.
type Leftover struct {
	Kind   string `json:"kind"` // "process", "mount", "loop_device", "cgroup"
	What   string `json:"what"`
	Remove string `json:"remove"` // a shell command that removes it
}

// Cleanup deletes every sandbox and warm pool member of the state
// directory cfg.StateDir (killing their processes, removing their cgroups,
// unmounting and discarding their disks, those of removals a server did
// not finish after its answer too), unmounts its volumes' and
// images' filesystems, and removes the driver's parent cgroups when they
// are empty. It needs no sidecar binary and no running server. It returns
// what is still left, each with the command to remove it; a nil error and
// no leftovers mean nothing of the stack remains.
func Cleanup(ctx context.Context, cfg Config) ([]Leftover, error) {
	d := &Driver{cfg: cfg, log: cfg.Log, root: os.Geteuid() == 0, children: map[string]<-chan struct{}{}, loss: newLossWatch()}
	if d.log == nil {
		d.log = slog.Default()
	}
	if cfg.StateDir == "" {
		return nil, errors.New("clean up: empty state dir")
	}
	var errs []error
	if d.root {
		if cg, err := jail.DetectCgroups("/"); err == nil {
			d.cgroups = cg
		}
	}
	d.data = cfg.StateDir
	if ok, _ := loopdisk.IsMountPoint(filepath.Join(cfg.StateDir, cowMount)); ok {
		d.data = filepath.Join(cfg.StateDir, cowMount)
	}
	d.findMoved()
	if exists(filepath.Join(d.data, "images")) || exists(d.volumesDir()) {
		d.images = loopdisk.NewImages(filepath.Join(d.data, "images"), nil)
		d.storage = StorageLoop
	}
	d.finishRemovals() // those a server that died after its answers left
	if err := d.clearPool(ctx); err != nil {
		errs = append(errs, fmt.Errorf("clear warm pool: %w", err))
	}
	obs, err := d.List(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, o := range obs {
		wg.Go(func() {
			if err := d.Delete(ctx, o.ID); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := d.removals.wait(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := d.unmountVolumes(); err != nil {
		errs = append(errs, err)
	}
	// Mounts under the state directory nothing else unmounted (image
	// roots of server/images, disks of a half-made sandbox).
	for _, m := range mountsUnder(cfg.StateDir) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	d.removeStaleCgroups(ctx)
	// Loop devices detach, and lazily unmounted filesystems go, a moment
	// after their last user: give them that moment before reporting.
	left := d.leftovers()
	for i := 0; len(left) > 0 && i < 200 && ctx.Err() == nil; i++ {
		time.Sleep(100 * time.Millisecond)
		left = d.leftovers()
	}
	return left, errors.Join(errs...)
}

// removeStaleCgroups removes the cgroups of this state directory's
// sandboxes that no state file names any more, then the driver's parent
// cgroups if nothing else uses them.
func (d *Driver) removeStaleCgroups(ctx context.Context) {
	if d.cgroups == nil {
		return
	}
	for _, dir := range d.ownCgroups() {
		_ = jail.Cgroup{Dirs: []string{dir}}.Remove(ctx)
	}
	for _, p := range d.cgroups.Parents() {
		_ = unix.Rmdir(p) // fails while anything else is below it: fine
	}
}

// ownCgroups lists the cgroups of this state directory's sandboxes, by
// the suffix cgroupName gives them.
func (d *Driver) ownCgroups() []string {
	if d.cgroups == nil {
		return nil
	}
	suffix := "." + stateDirTag(d.cfg.StateDir)
	var out []string
	for _, p := range d.cgroups.Parents() {
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if e.IsDir() && strings.HasSuffix(e.Name(), suffix) {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	return out
}

// stateDirTag is what cgroupName appends to a sandbox id.
func stateDirTag(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return hex.EncodeToString(sum[:4])
}

// leftovers lists what of the state directory is still on the host.
func (d *Driver) leftovers() []Leftover {
	var out []Leftover
	dirs := []string{d.sandboxesDir(), d.poolDir()}
	if root := d.otherRoot(); root != "" {
		dirs = append(dirs, filepath.Join(root, "sandboxes"), filepath.Join(root, "pool"))
	}
	for _, parent := range dirs {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			st, err := readState(filepath.Join(parent, e.Name()))
			if err == nil && st.PID != 0 && alive(st) {
				out = append(out, Leftover{
					Kind: "process", What: fmt.Sprintf("sandbox %s: jail init pid %d", e.Name(), st.PID),
					Remove: fmt.Sprintf("kill -9 %d", st.PID),
				})
			}
		}
	}
	for _, m := range mountsUnder(d.cfg.StateDir) {
		out = append(out, Leftover{Kind: "mount", What: m, Remove: "umount -l " + m})
	}
	mounted := mountSources()
	for _, l := range loopsBackedUnder(d.cfg.StateDir) {
		if !mounted[l.dev] && detachesByItself(l.dev) {
			// Unmounted here and set to autoclear: the kernel detaches it
			// as soon as its filesystem's last user goes, which can be a
			// mount namespace another process copied while it was mounted
			// (another stack's jail being set up). Nothing is left to do.
			d.log.Debug("loop device detaches once another mount namespace lets go of its filesystem", "dev", l.dev, "file", l.file)
			continue
		}
		out = append(out, Leftover{Kind: "loop_device", What: l.dev + " backed by " + l.file, Remove: "losetup -d " + l.dev})
	}
	for _, c := range d.ownCgroups() {
		out = append(out, Leftover{Kind: "cgroup", What: c, Remove: "rmdir " + c})
	}
	return out
}

// mountsUnder lists the mount points at or below dir in this mount
// namespace, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	// Deepest first, so a parent is unmounted after what is below it.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

type loopDevice struct{ dev, file string }

// loopsBackedUnder lists the loop devices whose backing file is below dir
// (or was, before it was deleted).
func loopsBackedUnder(dir string) []loopDevice {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []loopDevice
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if strings.HasPrefix(backing, dir+"/") {
			out = append(out, loopDevice{dev: "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(f))), file: backing})
		}
	}
	return out
}

// mountSources lists the sources of this mount namespace's mounts
// ("/dev/loop3", …).
func mountSources() map[string]bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, after, ok := strings.Cut(sc.Text(), " - ")
		if fields := strings.Fields(after); ok && len(fields) >= 2 {
			out[unescapeMount(fields[1])] = true
		}
	}
	return out
}

// detachesByItself reports whether the loop device dev ("/dev/loopN") is
// set to autoclear, which the driver sets on every loop device it attaches.
func detachesByItself(dev string) bool {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "autoclear"))
	return err == nil && strings.TrimSpace(string(b)) == "1"
}
