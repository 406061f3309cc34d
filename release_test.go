package boxkite_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// releaseConfig is what the release tests read of goreleaser.yaml.
type releaseConfig struct {
	Builds []struct {
		ID     string   `yaml:"id"`
		Main   string   `yaml:"main"`
		Goos   []string `yaml:"goos"`
		Goarch []string `yaml:"goarch"`
		Env    []string `yaml:"env"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string   `yaml:"id"`
		IDs          []string `yaml:"ids"`
		AllowCounted bool     `yaml:"allow_different_binary_count"`
	} `yaml:"archives"`
}

// parseRelease reads a goreleaser configuration; one without builds is
// refused, as a release of nothing.
func parseRelease(data []byte) (releaseConfig, error) {
	var cfg releaseConfig
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("parse goreleaser configuration: %w", err)
	}
	if len(cfg.Builds) == 0 {
		return cfg, errors.New("the goreleaser configuration has no builds")
	}
	return cfg, nil
}

// loadRelease returns the repository's goreleaser.yaml, failing t when
// it cannot be read.
func loadRelease(t *testing.T) releaseConfig {
	t.Helper()
	data, err := os.ReadFile("goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseRelease(data)
	if err != nil {
		t.Fatalf("goreleaser.yaml: %v", err)
	}
	return cfg
}

// TestParseRelease: the fields both release tests read, and the refusals.
func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		ok         bool
	}{
		{"full", `
builds:
  - id: cli
    main: ./cmd/boxkite
    goos: [linux, darwin]
    goarch: [amd64, arm64]
    env: [CGO_ENABLED=0]
archives:
  - id: all
    ids: [cli]
    allow_different_binary_count: true
`, true},
		{"no builds", "archives: []\n", false},
		{"empty", "", false},
		{"not yaml", "builds: [", false},
		{"wrong type", "builds: 3\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseRelease([]byte(tc.yaml))
			if (err == nil) != tc.ok {
				t.Fatalf("parseRelease: %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			b, a := cfg.Builds[0], cfg.Archives[0]
			if b.ID != "cli" || b.Main != "./cmd/boxkite" || !slices.Equal(b.Goos, []string{"linux", "darwin"}) ||
				!slices.Equal(b.Goarch, []string{"amd64", "arm64"}) || !slices.Equal(b.Env, []string{"CGO_ENABLED=0"}) {
				t.Errorf("build %+v", b)
			}
			if a.ID != "all" || !slices.Equal(a.IDs, []string{"cli"}) || !a.AllowCounted {
				t.Errorf("archive %+v", a)
			}
		})
	}
}

// TestReleaseTargetsBuild compiles every binary of goreleaser.yaml for the
// release's other architecture of each OS it is released for (arm64, or
// amd64 on an arm64 host): `goreleaser check` compiles nothing, and
// sidecar/execwait_linux.go once named unix.SYS_EPOLL_WAIT, which
// linux/arm64 lacks, so the release failed while every test passed. The
// host's own architecture the other tests build; our only files by
// architecture are Linux's, so darwin/amd64 is left to darwin/arm64.
func TestReleaseTargetsBuild(t *testing.T) {
	cfg := loadRelease(t)
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

// TestReleaseArchivesBinaryCount: an archive whose builds are not all
// released for the same platforms (the server and sidecar are Linux only)
// holds fewer binaries on some, which goreleaser refuses at release time
// ("archive has different count of binaries for each platform") unless
// the archive sets allow_different_binary_count; `goreleaser check` does
// not notice.
func TestReleaseArchivesBinaryCount(t *testing.T) {
	cfg := loadRelease(t)
	goos := map[string][]string{}
	for _, b := range cfg.Builds {
		goos[b.ID] = b.Goos
	}
	for _, a := range cfg.Archives {
		perOS := map[string]int{}
		for _, id := range a.IDs {
			for _, o := range goos[id] {
				perOS[o]++
			}
		}
		counts := map[int]bool{}
		for _, n := range perOS {
			counts[n] = true
		}
		if len(counts) > 1 && !a.AllowCounted {
			t.Errorf("archive %s: binaries per OS %v differ, and allow_different_binary_count is not set", a.ID, perOS)
		}
	}
}
