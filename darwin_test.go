package boxkite_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDarwinImportsVet: every package of this module that a binary
// released for darwin (goreleaser.yaml) imports vets for darwin, its tests
// included, so the Linux-only code the CLI's packages keep in _linux files
// (and the _other files beside them) cannot rot unseen on this Linux CI:
// the bastion's and boxkite-mcp's tests, which start a real (Linux) server,
// once made the graph fail to vet there. TestReleaseTargetsBuild builds the
// binaries themselves.
func TestDarwinImportsVet(t *testing.T) {
	var mains []string
	for _, b := range loadRelease(t).Builds {
		if slices.Contains(b.Goos, "darwin") {
			mains = append(mains, b.Main)
		}
	}
	if len(mains) == 0 {
		t.Fatal("goreleaser.yaml releases nothing for darwin")
	}
	env := append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
	list := exec.Command("go", append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, mains...)...)
	list.Env = env
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list -deps %v for darwin: %v", mains, err)
	}
	var pkgs []string
	for p := range strings.FieldsSeq(string(out)) {
		if strings.HasPrefix(p, module+"/") {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) < len(mains) {
		t.Fatalf("go list -deps %v for darwin found %v, want at least the commands", mains, pkgs)
	}
	vet := exec.Command("go", append([]string{"vet"}, pkgs...)...)
	vet.Env = env
	if out, err := vet.CombinedOutput(); err != nil {
		t.Errorf("go vet for darwin of the %d packages the darwin binaries import: %v\n%s", len(pkgs), err, out)
	}
	// The sidecar is not released for darwin but keeps its non-Linux
	// variants (*_other.go) building, for development on a Mac.
	build := exec.Command("go", "build", "-o", os.DevNull, "./sidecar")
	build.Env = env
	if out, err := build.CombinedOutput(); err != nil {
		t.Errorf("go build ./sidecar for darwin: %v\n%s", err, out)
	}
}

// TestLinuxOnlyPackages: the local driver's packages that are Linux
// through and through (mounts, loop devices, namespaces) are left out of
// darwin builds deliberately, every file of them constrained to linux, so
// `GOOS=darwin go vet ./...` skips them instead of failing half-way
// through a package; the linux build has every file.
func TestLinuxOnlyPackages(t *testing.T) {
	for _, pkg := range []string{"./server/images", "./server/local", "./server/local/loopdisk", "./server/local/hostcap", "./server/local/hugecopy", "./server/local/snapstore"} {
		for _, goos := range []string{"darwin", "linux"} {
			list := exec.Command("go", "list", "-e", "-f", "{{len .GoFiles}} {{len .TestGoFiles}} {{len .IgnoredGoFiles}}", pkg)
			list.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=arm64", "CGO_ENABLED=0")
			out, err := list.Output()
			if err != nil {
				t.Fatalf("go list %s for %s: %v", pkg, goos, err)
			}
			var files, tests, ignored int
			if _, err := fmt.Sscan(string(out), &files, &tests, &ignored); err != nil {
				t.Fatalf("go list %s for %s said %q: %v", pkg, goos, out, err)
			}
			if goos == "darwin" && (files != 0 || tests != 0 || ignored == 0) {
				t.Errorf("%s for darwin has %d files and %d test files (%d left out), want every file left out: constrain each new file to linux", pkg, files, tests, ignored)
			}
			if goos == "linux" && (files == 0 || ignored != 0) {
				t.Errorf("%s for linux has %d files, %d left out, want every file", pkg, files, ignored)
			}
		}
	}
}
