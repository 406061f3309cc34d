package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoFreezer is returned by Freeze when no hierarchy of the cgroup has
// cgroup v2's cgroup.freeze (a host with cgroup v1 only).
var ErrNoFreezer = errors.New("no cgroup v2 freezer for this cgroup")

// Freeze stops (frozen true) or resumes every process of the cgroup with
// cgroup v2's cgroup.freeze, in each of its directories that has one
// (on a hybrid host, the controller-less cgroup2 one). A frozen process
// keeps its memory and files and can still be killed.
func (cg Cgroup) Freeze(frozen bool) error {
	value := "0"
	if frozen {
		value = "1"
	}
	done := false
	for _, dir := range cg.Dirs {
		if !exists(filepath.Join(dir, "cgroup.freeze")) {
			continue
		}
		if err := writeCgroupFile(dir, "cgroup.freeze", value); err != nil {
			return fmt.Errorf("freeze cgroup: %w", err)
		}
		done = true
	}
	if !done {
		return ErrNoFreezer
	}
	return nil
}

// Frozen reports whether the cgroup was asked to freeze (cgroup.freeze
// reads 1 in one of its directories).
func (cg Cgroup) Frozen() bool {
	for _, dir := range cg.Dirs {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.freeze"))
		if err == nil && strings.TrimSpace(string(b)) == "1" {
			return true
		}
	}
	return false
}
