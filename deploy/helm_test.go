package deploy

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// helmEnv names the helm binary the tests run; .ci/run builds helm from
// the module proxy into its tools cache and sets it.
const helmEnv = "BOXKITE_HELM"

// The release every rendering uses, as in the docs.
const (
	releaseName = "boxkite"
	releaseNS   = "boxkite"
	chartDir    = "helm/boxkite"
	kubeVersion = "1.37.2" // what internal/kubetest's API server reports
)

// helmBinary returns the helm to run: $BOXKITE_HELM, else helm on PATH.
// Without one the test skips, except in CI, where it fails.
func helmBinary(t testing.TB) string {
	t.Helper()
	path := os.Getenv(helmEnv)
	if path == "" {
		var err error
		if path, err = exec.LookPath("helm"); err != nil {
			path = ""
		}
	}
	if path == "" {
		msg := fmt.Sprintf("no helm: set %s or put helm on PATH (go install helm.sh/helm/v3/cmd/helm@v3.22.0)", helmEnv)
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; .ci/run builds it")
		}
		t.Skip(msg)
	}
	return path
}

// helm runs helm with its state directories in a temporary directory and
// no kubeconfig, so that nothing of the user's is read or written and no
// cluster is contacted. It returns stdout, or an error carrying stderr.
func helm(t testing.TB, args ...string) ([]byte, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// render runs helm template for the goldens' release with extra
// arguments (-f FILE, --set K=V).
func render(t testing.TB, extra ...string) ([]byte, error) {
	t.Helper()
	return renderAs(t, releaseName, releaseNS, extra...)
}

// renderAs renders the chart as release name in namespace ns.
func renderAs(t testing.TB, name, ns string, extra ...string) ([]byte, error) {
	t.Helper()
	args := append([]string{
		"template", name, chartDir,
		"--namespace", ns, "--kube-version", kubeVersion,
	}, extra...)
	return helm(t, args...)
}

// object is one decoded manifest.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }

func (o object) name() string { return str(o.get("metadata", "name")) }

func (o object) namespace() string { return str(o.get("metadata", "namespace")) }

// get walks maps by key; a missing step yields nil.
func (o object) get(path ...string) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func str(v any) string { s, _ := v.(string); return s }

func list(v any) []any { l, _ := v.([]any); return l }

func dict(v any) object { m, _ := v.(map[string]any); return m }

// parse decodes a multi-document YAML stream, dropping empty documents.
func parse(data []byte) ([]object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []object
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode manifest %d: %w", len(out)+1, err)
		}
		if o != nil {
			out = append(out, o)
		}
	}
}

// find returns the objects of a kind.
func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.kind() == kind {
			out = append(out, o)
		}
	}
	return out
}
