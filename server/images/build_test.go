//go:build linux

package images

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/sidecar/jail"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		spec api.ImageSpec
		want api.ImageSpec
		code string
	}{
		{"sorted and deduplicated", api.ImageSpec{AptPackages: []string{"tree", "jq", "tree"}}, api.ImageSpec{Base: BaseDefault, AptPackages: []string{"jq", "tree"}}, ""},
		{"pinned", api.ImageSpec{AptPackages: []string{"jq=1.6-2.1+deb12u1"}}, api.ImageSpec{Base: BaseDefault, AptPackages: []string{"jq=1.6-2.1+deb12u1"}}, ""},
		{"shell in a name", api.ImageSpec{AptPackages: []string{"jq; rm -rf /"}}, api.ImageSpec{}, api.CodeValidation},
		{"option as a name", api.ImageSpec{AptPackages: []string{"-oAPT::Foo=1"}}, api.ImageSpec{}, api.CodeValidation},
		{"other base", api.ImageSpec{Base: "boxkite-rust", AptPackages: []string{"jq"}}, api.ImageSpec{}, api.CodeValidation},
		{"nothing to install", api.ImageSpec{}, api.ImageSpec{}, api.CodeValidation},
		{"too many", api.ImageSpec{AptPackages: make([]string, maxPackages+1)}, api.ImageSpec{}, api.CodeValidation},
		{"pip pinned", api.ImageSpec{PythonPackages: []string{"requests==2.32.3"}}, api.ImageSpec{Base: BaseDefault, PythonPackages: []string{"requests==2.32.3"}}, ""},
		{"pip unpinned", api.ImageSpec{PythonPackages: []string{"requests"}}, api.ImageSpec{}, api.CodeValidation},
		{"npm pinned", api.ImageSpec{NPMPackages: []string{"semver==7.6.3", "@types/node==20.1.0"}}, api.ImageSpec{Base: BaseDefault, NPMPackages: []string{"@types/node==20.1.0", "semver==7.6.3"}}, ""},
		{"npm unpinned", api.ImageSpec{NPMPackages: []string{"semver"}}, api.ImageSpec{}, api.CodeValidation},
		{"npm at-version", api.ImageSpec{NPMPackages: []string{"semver@7.6.3"}}, api.ImageSpec{}, api.CodeValidation},
		{"npm path", api.ImageSpec{NPMPackages: []string{"../x==1"}}, api.ImageSpec{}, api.CodeValidation},
		{"npm option", api.ImageSpec{NPMPackages: []string{"--registry=http://evil==1"}}, api.ImageSpec{}, api.CodeValidation},
		{"npm git url", api.ImageSpec{NPMPackages: []string{"git+https://x/y==1"}}, api.ImageSpec{}, api.CodeValidation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(tt.spec)
			if tt.code != "" {
				ae, ok := errors.AsType[*api.Error](err)
				if !ok || ae.Code != tt.code {
					t.Fatalf("Validate = %v, want code %s", err, tt.code)
				}
				if ae.Hint == "" {
					t.Errorf("Validate = %v, without a hint", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
			if specHash(got) != specHash(tt.want) {
				t.Error("equal specs hash differently")
			}
		})
	}
}

func TestGrants(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sources.list.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"sources.list.d/debian.sources": "Types: deb\n# URIs: http://commented.example/\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n\n" +
			"Types: deb\nuris: http://deb.debian.org/debian-security\n https://mirror.example:8443/x\n\n" +
			"Types: deb\nURIs: https://off.example/\nEnabled: no\n",
		"sources.list":              "# deb http://commented.example/ x\ndeb [arch=amd64 signed-by=/k.gpg] http://apt.example.org/repo stable main\n",
		"sources.list.d/extra.list": "deb http://extra.example/debian bookworm main # a comment\n",
		// apt reads neither of these.
		"sources.list.d/gcloud.list.disabled-by-farm": "deb https://packages.cloud.google.com/apt cloud-sdk main\n",
		"sources.list.d/nodesource.sources.dpkg-old":  "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\n",
		"sources.list.d/enabled-yes.sources":          "Types: deb\nURIs: http://yes.example/\nEnabled: yes\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	grants := func(s Sources, apt, pip, npm bool) []string {
		var out []string
		for _, g := range s.grants(apt, pip, npm) {
			out = append(out, g.String())
		}
		return out
	}
	s := Sources{AptDir: dir, PipIndex: "https://pypi.org/simple", NPMRegistry: "http://npm.internal:4873/"}
	for _, tc := range []struct {
		name          string
		apt, pip, npm bool
		want          []string
	}{
		{"apt", true, false, false, []string{"apt.example.org:80", "deb.debian.org:80", "mirror.example:8443", "yes.example:80", "extra.example:80"}},
		{"pip from PyPI", false, true, false, []string{"pypi.org:443", "files.pythonhosted.org:443"}},
		{"npm", false, false, true, []string{"npm.internal:4873"}},
		{"nothing", false, false, false, nil},
	} {
		if diff := cmp.Diff(tc.want, grants(s, tc.apt, tc.pip, tc.npm)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	local := Sources{PipIndex: "http://pypi.test:8080/simple"}
	if diff := cmp.Diff([]string{"pypi.test:8080"}, grants(local, false, true, false)); diff != "" {
		t.Errorf("a local index (-want +got):\n%s", diff)
	}
}

func TestMirrorAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"151.101.2.132": true, "203.0.113.80": true, "10.1.2.3": true, "fd12::1": true,
		"127.0.0.1": false, "::1": false, "169.254.169.254": false, "fd00:ec2::254": false, "0.0.0.0": false,
		"::ffff:127.0.0.1": false, "fe80::1": false, "224.0.0.1": false, "64:ff9b::7f00:1": false,
	} {
		if got := MirrorAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("MirrorAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

// FuzzValidate: whatever a client sends, an accepted spec holds only
// packages that cannot be read as options or URLs by the package
// managers, and validating it again changes nothing.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"jq", "jq=1.6-2.1+deb12u1", "requests==2.32.3", "@types/node==20.1.0", "-oAPT::x=1", "../x==1", "a==b==c"} {
		f.Add(s, s, s)
	}
	f.Fuzz(func(t *testing.T, apt, pip, npm string) {
		spec, err := Validate(api.ImageSpec{AptPackages: []string{apt}, PythonPackages: []string{pip}, NPMPackages: []string{npm}})
		if err != nil {
			return
		}
		for _, p := range append(append(slices.Clone(spec.AptPackages), spec.PythonPackages...), spec.NPMPackages...) {
			if strings.HasPrefix(p, "-") || strings.Contains(p, ":/") || strings.ContainsAny(p, " \t\n;&|$`'\"\\") {
				t.Errorf("accepted package %q", p)
			}
		}
		again, err := Validate(spec)
		if err != nil || !cmp.Equal(spec, again) {
			t.Errorf("Validate(Validate(x)) = %+v, %v; want %+v", again, err, spec)
		}
	})
}

// FuzzAptSources: whatever a sources file holds, every URI read from it
// is one of its own fields, and a disabled deb822 file yields none.
func FuzzAptSources(f *testing.F) {
	for _, s := range []string{
		"deb http://deb.debian.org/debian bookworm main\n", "deb [ arch=amd64 ] http://x/ y\n", "deb [broken\n",
		"Types: deb\nURIs: http://a/ http://b/\n\nURIs: http://c/\nEnabled: no\n", "URIs:\n http://d/\n", " \n:\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, uris := range [][]string{oneLineSources(text), deb822Sources(text)} {
			for _, u := range uris {
				if u == "" || strings.ContainsAny(u, " \t\n") || !strings.Contains(text, u) {
					t.Errorf("URI %q from %q", u, text)
				}
			}
		}
		oneStanza := !strings.HasPrefix(text, " ") && !strings.HasPrefix(text, "\t") // no continuation of Enabled
		for line := range strings.Lines(text) {
			oneStanza = oneStanza && strings.TrimSpace(line) != ""
		}
		if got := deb822Sources("Enabled: no\n" + text); oneStanza && !strings.Contains(strings.ToLower(text), "enabled") && len(got) > 0 {
			t.Errorf("a disabled single stanza gave %q", got)
		}
	})
}

// FuzzGrantOf: a source URL becomes a grant for its own host and port, or
// none.
func FuzzGrantOf(f *testing.F) {
	for _, s := range []string{"http://deb.debian.org/debian", "https://m.example:8443/x", "ftp://x/", "http://[::1]:80/", "http://a b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		g, ok := grantOf(raw)
		if !ok {
			return
		}
		if g.Port < 1 || g.Port > 65535 || g.Host == "" || strings.ContainsAny(g.Host, "/@ ") {
			t.Errorf("grantOf(%q) = %+v", raw, g)
		}
	})
}

// TestFailure: a failed build is explained by the refused connection if
// there was one, else by the refused write, else by the failed step.
func TestFailure(t *testing.T) {
	step := errors.New("run build: exit status 1")
	ro := outputSeen{readOnly: "Error: EROFS: read-only file system, open '/x'"}
	for _, tc := range []struct {
		name    string
		refused []string
		out     outputSeen
		err     error
		code    string
		inMsg   string
	}{
		{"step", nil, outputSeen{}, step, api.CodeImageBuildFailed, "exit status 1"},
		{"named step", nil, outputSeen{stepFailed: "build step npm exited with status 1"}, step, api.CodeImageBuildFailed, "build step npm exited with status 1"},
		{"write", nil, ro, step, api.CodeImageBuildWriteRefused, "open '/x'"},
		{"egress", []string{"evil.test:443", "other.test:80"}, outputSeen{}, step, api.CodeImageBuildEgressRefused, "evil.test:443, other.test:80"},
		{"egress first", []string{"evil.test:443"}, ro, step, api.CodeImageBuildEgressRefused, "evil.test:443"},
		{"timeout", nil, outputSeen{}, fmt.Errorf("%w: %w", errBuildTimeout{time.Minute}, step), api.CodeImageBuildFailed, "longer than 1m0s"},
	} {
		f := failure("img_x", tc.err, tc.refused, tc.out)
		if f.code != tc.code || !strings.Contains(f.Error(), tc.inMsg) || f.hint == "" || !errors.Is(f, step) {
			t.Errorf("%s: %+v", tc.name, f)
		}
	}
}

// TestOutputWatch: the first line telling of a read-only filesystem and
// the failed step are kept, however the output is cut into writes, and
// everything is passed on.
func TestOutputWatch(t *testing.T) {
	out := "added 1 package\nnpm error Error: EROFS: read-only file system, open '/x'\n" +
		"mkdir: cannot create directory '/opt/y': Read-only file system\n" + jail.StepFailed("npm", 1) + "\n"
	for _, chunk := range []int{1, 7, len(out)} {
		var sink strings.Builder
		w := &outputWatch{w: &sink}
		for i := 0; i < len(out); i += chunk {
			if _, err := w.Write([]byte(out[i:min(i+chunk, len(out))])); err != nil {
				t.Fatal(err)
			}
		}
		want := outputSeen{readOnly: "npm error Error: EROFS: read-only file system, open '/x'", stepFailed: "build step npm exited with status 1"}
		if w.seen != want || sink.String() != out {
			t.Errorf("chunks of %d: saw %+v, passed %q", chunk, w.seen, sink.String())
		}
	}
}

// TestNPMStep: npm installs the pinned packages globally from the
// configured registry with their install scripts allowed, never
// ignored.
func TestNPMStep(t *testing.T) {
	m := &Manager{sources: Sources{NPMRegistry: "http://npm.test:4873/"}}
	steps := m.steps(api.ImageSpec{NPMPackages: []string{"@anthropic-ai/claude-code==2.1.0", "cowsay==1.6.0"}}, "http://127.0.0.1:3128")
	want := [][]string{{
		"npm", "install", "--global", "--prefix", "/usr/local", "--no-audit", "--no-fund", "--no-update-notifier",
		"--allow-scripts=@anthropic-ai/claude-code@2.1.0,cowsay@1.6.0", "--registry", "http://npm.test:4873/",
		"@anthropic-ai/claude-code@2.1.0", "cowsay@1.6.0",
	}}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}
