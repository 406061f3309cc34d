package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
)

// TestImagesWithoutStore: a server that keeps no images (the kube
// driver's) answers every /v1/images route 422 not_supported with a hint
// saying what to do instead, as it answers a create's image_id; not the
// hintless 404 "no route" of a path that does not exist, which
// `boxkite images ls` printed with no hint on Kubernetes.
func TestImagesWithoutStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	for _, tt := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/images", api.CreateImageRequest{ImageSpec: api.ImageSpec{AptPackages: []string{"jq"}}}},
		{"POST", "/v1/images/import?label=x", nil},
		{"GET", "/v1/images", nil},
		{"GET", "/v1/images/img0", nil},
		{"GET", "/v1/images/img0/logs", nil},
		{"GET", "/v1/images/img0/log", nil},
		{"DELETE", "/v1/images/img0", nil},
		{"POST", "/v1/sandboxes", api.CreateSandboxRequest{ImageID: "img0"}},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, body := e.do(tt.method, tt.path, e.KeyA, tt.body)
			ae := wantError(t, resp, body, 422, api.CodeNotSupported)
			if !strings.Contains(ae.Message+ae.Hint, "images") || ae.Hint == "" {
				t.Errorf("%s %s: %q, hint %q; want it to say the server keeps no images, with a hint", tt.method, tt.path, ae.Message, ae.Hint)
			}
		})
	}
}

// TestE2BTemplatesHintWithoutImages: E2B's template API is not mapped;
// its hint names what works on the server: building a boxkite image
// where the server keeps images, the sandbox image
// (docs/kubernetes.md) where it keeps none (the kube driver's, which
// refuses POST /v1/images).
func TestE2BTemplatesHintWithoutImages(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		cfg       server.Config
		want, not string
	}{
		{"no image store", server.Config{}, "docs/kubernetes.md", "POST /v1/images"},
		{"image store", server.Config{Images: stubImages{}}, "POST /v1/images", "docs/kubernetes.md"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.cfg)
			e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
			for _, path := range []string{"/templates", "/v2/templates/t1", "/v3/templates"} {
				status, body := e2bsdk.Do(t, e.URL, "POST", path, http.Header{"X-API-Key": {e.KeyA}}, `{}`)
				var got struct{ Message string } // E2B's shape: the message carries the hint
				_ = json.Unmarshal(body, &got)
				if status != http.StatusNotImplemented || !strings.Contains(got.Message, tt.want) || strings.Contains(got.Message, tt.not) {
					t.Errorf("POST %s = %d %s; want 501 with a hint naming %q, not %q", path, status, body, tt.want, tt.not)
				}
			}
		})
	}
}
