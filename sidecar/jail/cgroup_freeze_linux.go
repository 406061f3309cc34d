package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNoFreezer is returned by Freeze when the cgroup has no freezer: no
// directory with cgroup v2's cgroup.freeze nor in a v1 freezer hierarchy
// (a sandbox made before its driver knew the v1 freezer, or a host that
// mounts neither).
var ErrNoFreezer = errors.New("no freezer for this cgroup (neither cgroup v2's cgroup.freeze nor a v1 freezer hierarchy)")

// freezeTimeout bounds how long Freeze waits for every task to stop: a
// task in an uninterruptible sleep (a stuck disk, say) does not freeze
// until it wakes.
const freezeTimeout = 5 * time.Second

// Freeze stops (frozen true) or resumes every process of the cgroup, with
// cgroup v2's cgroup.freeze in each of its directories that has one (on a
// hybrid host, the controller-less cgroup2 one) or else the v1 freezer's
// freezer.state. It returns once every task is stopped (or, thawing, at
// once). A frozen process keeps its memory and files; killing it takes a
// thaw on cgroup v1, which Remove does.
func (cg Cgroup) Freeze(frozen bool) error {
	v2, v1 := cg.freezerDirs()
	if len(v2) == 0 && len(v1) == 0 {
		return ErrNoFreezer
	}
	if !frozen {
		// Thaw through every freezer, whichever froze it.
		for _, dir := range v2 {
			if err := writeCgroupFile(dir, "cgroup.freeze", "0"); err != nil {
				return fmt.Errorf("thaw cgroup: %w", err)
			}
		}
		for _, dir := range v1 {
			if err := writeCgroupFile(dir, "freezer.state", "THAWED"); err != nil {
				return fmt.Errorf("thaw cgroup: %w", err)
			}
		}
		return nil
	}
	dirs, name, value := v2, "cgroup.freeze", "1"
	if len(v2) == 0 {
		dirs, name, value = v1, "freezer.state", "FROZEN"
	}
	for _, dir := range dirs {
		if err := writeCgroupFile(dir, name, value); err != nil {
			return fmt.Errorf("freeze cgroup: %w", err)
		}
	}
	deadline := time.Now().Add(freezeTimeout)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		done := true
		for _, dir := range dirs {
			done = done && frozenDone(dir, len(v2) > 0)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze cgroup: tasks still running after %s (one may be in an uninterruptible sleep)", freezeTimeout)
		}
		time.Sleep(wait)
	}
}

// freezerDirs returns the cgroup's directories with cgroup v2's
// cgroup.freeze and those of the v1 freezer (freezer.state).
func (cg Cgroup) freezerDirs() (v2, v1 []string) {
	for _, dir := range cg.Dirs {
		switch {
		case exists(filepath.Join(dir, "cgroup.freeze")):
			v2 = append(v2, dir)
		case exists(filepath.Join(dir, "freezer.state")):
			v1 = append(v1, dir)
		}
	}
	return v2, v1
}

// frozenDone reports whether every task of dir has stopped.
func frozenDone(dir string, v2 bool) bool {
	if v2 {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		return err == nil && strings.Contains("\n"+string(b), "\nfrozen 1")
	}
	b, err := os.ReadFile(filepath.Join(dir, "freezer.state"))
	return err == nil && strings.TrimSpace(string(b)) == "FROZEN"
}

// Frozen reports whether the cgroup was asked to freeze by either
// freezer (cgroup.freeze reads 1, or freezer.state is not THAWED).
func (cg Cgroup) Frozen() bool {
	v2, v1 := cg.freezerDirs()
	for _, dir := range v2 {
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.freeze")); err == nil && strings.TrimSpace(string(b)) == "1" {
			return true
		}
	}
	for _, dir := range v1 {
		if b, err := os.ReadFile(filepath.Join(dir, "freezer.state")); err == nil && strings.TrimSpace(string(b)) != "THAWED" {
			return true
		}
	}
	return false
}

// CanFreeze reports whether Freeze can work on the cgroup.
func (cg Cgroup) CanFreeze() bool {
	v2, v1 := cg.freezerDirs()
	return len(v2) > 0 || len(v1) > 0
}

// CanFreeze reports whether the sandbox cgroups Create makes can be
// frozen: a cgroup2 hierarchy (cgroup.freeze, Linux 5.2) or a v1 freezer.
func (c *Cgroups) CanFreeze() bool {
	return c.v2 != "" || c.killDir != "" || c.v1["freezer"] != ""
}
