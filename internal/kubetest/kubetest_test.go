package kubetest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestCluster checks the shared cluster serves the API, with the admin
// client and with kubectl on the written kubeconfig.
func TestCluster(t *testing.T) {
	c := Shared(t)
	ns := c.Namespace(t)
	sa, err := c.Client.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get default service account: %v", err)
	}
	if sa.Namespace != ns {
		t.Errorf("service account namespace = %q, want %q", sa.Namespace, ns)
	}
	out, err := exec.Command(c.Assets+"/kubectl", "--kubeconfig", c.Kubeconfig, "get", "namespace", ns, "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get namespace: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "namespace/"+ns; got != want {
		t.Errorf("kubectl get namespace = %q, want %q", got, want)
	}
}
