package boxkite_test

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestReleaseTargetsBuild compiles every binary of goreleaser.yaml for the
// release's other architecture of each OS it is released for (arm64, or
// amd64 on an arm64 host): `goreleaser check` compiles nothing, and
// sidecar/execwait_linux.go once named unix.SYS_EPOLL_WAIT, which
// linux/arm64 lacks, so the release failed while every test passed. The
// host's own architecture the other tests build; our only files by
// architecture are Linux's, so darwin/amd64 is left to darwin/arm64.
func TestReleaseTargetsBuild(t *testing.T) {
	data, err := os.ReadFile("goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct {
			ID     string   `yaml:"id"`
			Main   string   `yaml:"main"`
			Goos   []string `yaml:"goos"`
			Goarch []string `yaml:"goarch"`
			Env    []string `yaml:"env"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("parse goreleaser.yaml: %v", err)
	}
	if len(cfg.Builds) == 0 {
		t.Fatal("goreleaser.yaml has no builds")
	}
	for _, b := range cfg.Builds {
		for _, goos := range b.Goos {
			arch := "arm64"
			if goos == runtime.GOOS && runtime.GOARCH == "arm64" {
				arch = "amd64"
			}
			if !slices.Contains(b.Goarch, arch) {
				t.Errorf("build %s: goarch %v lacks %s", b.ID, b.Goarch, arch)
				continue
			}
			cmd := exec.Command("go", "build", "-trimpath", "-o", os.DevNull, b.Main)
			cmd.Env = append(append(os.Environ(), b.Env...), "GOOS="+goos, "GOARCH="+arch)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("build %s for %s/%s: %v\n%s", b.ID, goos, arch, err, out)
			}
		}
	}
}
