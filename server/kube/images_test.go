package kube_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/cli"
	"github.com/boxkite/boxkite/server/kube"
)

// TestImagesRefused: images are the local driver's. Against a server on
// the kube driver, boxkite's image commands and a create with an image
// fail with not_supported and a hint saying what to do on Kubernetes;
// `boxkite images ls` printed the hintless "no route for GET /v1/images".
func TestImagesRefused(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	t.Setenv("BOXKITE_HOME", t.TempDir())
	t.Setenv("BOXKITE_URL", e.url)
	t.Setenv("BOXKITE_API_KEY", e.key)
	t.Setenv("NO_COLOR", "1")
	for _, args := range [][]string{
		{"images", "ls"},
		{"images", "build", "--apt-package", "jq"},
		{"images", "get", "img0"},
		{"session", "create", "--image", "img0"},
		{"session", "create", "--image", "0123456789abcdef0123456789abcdef"}, // an id: no lookup by label
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			app := cli.NewApp(cli.IO{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}, "test")
			code := cli.Execute(context.Background(), cli.NewRoot(app), args)
			if code == 0 || !strings.Contains(stderr.String(), "not_supported") || !strings.Contains(stderr.String(), "hint: ") ||
				!strings.Contains(stderr.String(), "docs/kubernetes.md") {
				t.Errorf("boxkite %s: exit %d\nstdout: %s\nstderr: %s\nwant not_supported with the hint to docs/kubernetes.md",
					strings.Join(args, " "), code, stdout.String(), stderr.String())
			}
		})
	}
}
