package jail

import (
	"path/filepath"
	"slices"
)

// Parents returns the directories Prepare makes, deepest first: the
// parent of sandbox cgroups in each hierarchy and, on cgroup v2, the leaf
// the server moved itself to. A clean-up lists what is left below them
// and removes them once empty.
func (c *Cgroups) Parents() []string {
	var out []string
	if c.v2 != "" {
		return []string{filepath.Join(c.v2, cgroupParent), filepath.Join(c.v2, "boxkite-server")}
	}
	for _, dir := range c.v1 {
		if p := filepath.Join(dir, cgroupParent); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if c.killDir != "" {
		out = append(out, filepath.Join(c.killDir, cgroupParent))
	}
	slices.Sort(out)
	return out
}
