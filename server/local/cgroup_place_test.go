//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// TestJailStartsInItsCgroup: a jail started with its cgroup
// (Spec.CgroupDirs, as the driver's start does) is in the sandbox's
// cgroup of every hierarchy before its launch document is written, so
// before its init runs anything of its own: placed by its clone in the
// spawner's helper, or in this process when no spawner serves, and moved
// by Start for a nested jail (one mapped id), whose clone cannot.
func TestJailStartsInItsCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("cgroups need root, as CI has")
		}
		t.Skip("cgroups need root")
	}
	d := newDriver(t)
	if d.cgroups == nil {
		t.Fatal("the driver found no cgroups")
	}
	spawner := jail.NewSpawner(sidecarBin)
	t.Cleanup(func() { _ = spawner.Close() })
	errStop := errors.New("stop before the launch document")
	for i, tt := range []struct {
		name   string
		start  func(*exec.Cmd, jail.Spec, string, *os.File, func(int) error) error
		nested bool
	}{
		{"spawner", spawner.Start, false},
		{"no spawner", jail.Start, false},
		{"nested", jail.Start, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("jailtest.place.%d.%d", os.Getpid(), i)
			lim, _ := d.limits("")
			cg, err := d.cgroups.Create(name, lim)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cg.Remove(context.Background()) })
			spec := jail.Spec{ID: name, RunDir: t.TempDir(), Workspace: t.TempDir(), CgroupDirs: cg.Dirs}
			if !tt.nested {
				spec.HostIDBase = 0x7fc00000
			}
			cmd := &exec.Cmd{Path: sidecarBin, Args: []string{"boxkite-sidecar", "init"}}
			var in int
			err = tt.start(cmd, spec, "token", nil, func(pid int) error {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
				if err != nil {
					return err
				}
				for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					if strings.HasSuffix(line, "/boxkite/"+name) {
						in++
					}
				}
				if in != len(cg.Dirs) {
					t.Errorf("before its launch document the jail is in %d sandbox cgroups, want %d:\n%s", in, len(cg.Dirs), b)
				}
				return errStop
			})
			if !errors.Is(err, errStop) {
				t.Fatalf("start = %v, want the stop", err)
			}
		})
	}
}
