package server_test

import (
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
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
