package kubetest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/testport"
	"github.com/google/go-cmp/cmp"

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

// TestStartPortTaken: a port of etcd's or kube-apiserver's taken between
// the pick and the bind (another test's server holding it) does not fail
// the start, and with it every test of the binary: both start again on
// other ports.
func TestStartPortTaken(t *testing.T) {
	assets := Assets(t)
	for _, tc := range []struct {
		name  string
		taken int // which of the three ports is the held one
	}{
		{"etcd peers", 1},
		{"apiserver", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := testport.Hold(t, tc.taken)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c, err := start(ctx, assets, held.PickN)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Stop()
			if held.Picks() < 2 {
				t.Fatalf("the cluster started with a held port (%d picks)", held.Picks())
			}
			if _, err := c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("list namespaces on the restarted cluster: %v", err)
			}
		})
	}
}

// TestCountingClient: the counting client records each request it makes
// by verb and resource, and Take empties the record.
func TestCountingClient(t *testing.T) {
	c := Shared(t)
	ns := c.Namespace(t)
	client, reqs := c.CountingClient(t)
	ctx := context.Background()
	if _, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "a=b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := client.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "none", metav1.DeleteOptions{}); err == nil {
		t.Fatal("deleted a pod that does not exist")
	}
	want := []string{"get serviceaccounts", "list pods", "get namespaces", "watch secrets", "delete pods"}
	if diff := cmp.Diff(want, reqs.Take()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if got := reqs.Take(); len(got) != 0 {
		t.Errorf("requests after Take: %v, want none", got)
	}
}
