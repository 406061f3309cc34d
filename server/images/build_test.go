package images

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
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
		{"npm not yet", api.ImageSpec{NPMPackages: []string{"left-pad@1.3.0"}}, api.ImageSpec{}, api.CodeNotSupported},
		{"npm name checked first", api.ImageSpec{NPMPackages: []string{"../x"}}, api.ImageSpec{}, api.CodeValidation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(tt.spec)
			if tt.code != "" {
				ae, ok := errors.AsType[*api.Error](err)
				if !ok || ae.Code != tt.code {
					t.Fatalf("Validate = %v, want code %s", err, tt.code)
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

func TestPackageHosts(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sources.list.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"sources.list.d/debian.sources": "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security https://mirror.example:443/x\n",
		"sources.list":                  "# deb http://commented.example/ x\ndeb [arch=amd64] http://apt.example.org/repo stable main\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"deb.debian.org", "mirror.example", "apt.example.org"}
	if diff := cmp.Diff(want, packageHosts(dir)); diff != "" {
		t.Errorf("packageHosts (-want +got):\n%s", diff)
	}
}

// TestProxyRefuses: the build proxy forwards nothing to hosts that are not
// package hosts, nor to other ports of them.
func TestProxyRefuses(t *testing.T) {
	reached := false
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	defer target.Close()
	p := httptest.NewServer(newProxy([]string{"deb.debian.org", "127.0.0.1"}, func(string, ...any) {}))
	defer p.Close()
	pu, _ := url.Parse(p.URL)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	for _, u := range []string{target.URL + "/x", "https://" + target.Listener.Addr().String() + "/x", "http://example.com/"} {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s through the proxy: %d, want 403", u, resp.StatusCode)
			}
		}
	}
	if reached {
		t.Error("the proxy reached a host:port it must refuse")
	}
}

// TestProxyTunnels: allowed hosts are reached, plain and through CONNECT
// (how pip and apt over https use it).
func TestProxyTunnels(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("plain")) }))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("tunnel")) }))
	defer tls.Close()
	pr := newProxy([]string{"127.0.0.1"}, func(string, ...any) {})
	for _, s := range []*httptest.Server{plain, tls} {
		_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
		pr.ports[port] = true
	}
	p := httptest.NewServer(pr)
	defer p.Close()
	pu, _ := url.Parse(p.URL)
	tr := tls.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(pu)
	c := &http.Client{Transport: tr}
	for url, want := range map[string]string{plain.URL: "plain", tls.URL: "tunnel"} {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("GET %s = %q, want %q", url, b, want)
		}
	}
}
