package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boxkite/boxkite/internal/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// kubectl runs the cluster's kubectl with its admin kubeconfig.
func kubectl(c *kubetest.Cluster, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.Assets, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// createNamespace makes a namespace with the default ServiceAccount that
// admission wants (no controller-manager runs here to make it).
func createNamespace(t *testing.T, c *kubetest.Cluster, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	defaultSA(t, c, name)
}

func defaultSA(t *testing.T, c *kubetest.Cluster, ns string) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	_, err := c.Client.CoreV1().ServiceAccounts(ns).Create(context.Background(), sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create default service account in %s: %v", ns, err)
	}
}

// install renders the chart as release name into namespace "r-"+name with
// its sandboxes in "s-"+name, and applies it server-side as helm would,
// creating the namespaces helm would not. Distinct names keep the
// releases' objects, cluster-scoped ones included, apart.
func install(t *testing.T, c *kubetest.Cluster, name string, extra ...string) []object {
	t.Helper()
	release, sandboxes := "r-"+name, "s-"+name
	data, err := renderAs(t, name, release, append(extra, "--set", "sandboxes.namespace="+sandboxes)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, c, release)
	if len(find(objs, "Namespace")) == 0 {
		createNamespace(t, c, sandboxes) // createNamespace=false: it exists already
	}
	out, err := kubectl(c, data, "apply", "--server-side", "--field-manager=boxkite-test", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply of %s: %v\n%s", name, err, out)
	}
	if got := strings.Count(out, "serverside-applied"); got != len(objs) {
		t.Errorf("%s: %d of %d objects applied:\n%s", name, got, len(objs), out)
	}
	return objs
}

// TestChartApplies applies the chart, for the defaults and each values
// file, to a real API server, which must accept every object; then checks
// with the API server's own authorizer that the server's account can do
// what the kube driver does and nothing more.
func TestChartApplies(t *testing.T) {
	helmBinary(t)
	c := kubetest.Shared(t)
	cases := map[string][]string{
		"default": nil,
		// The longest release name helm accepts: every object's name
		// still fits (a Service's is a DNS label, at most 63 characters).
		strings.Repeat("x", 53): nil,
	}
	files, _ := filepath.Glob("testdata/values/*.yaml")
	for _, f := range files {
		cases[strings.TrimSuffix(filepath.Base(f), ".yaml")] = []string{"-f", f}
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			objs := install(t, c, name, args...)
			var account string
			for _, b := range find(objs, "RoleBinding") {
				s := dict(list(b["subjects"])[0])
				account = "system:serviceaccount:" + str(s["namespace"]) + ":" + str(s["name"])
			}
			checkCanI(t, c, account, "r-"+name, "s-"+name)
		})
	}
}

// checkCanI asks the API server's authorizer (a SubjectAccessReview, what
// kubectl auth can-i --as does) what the server's account may do.
func checkCanI(t *testing.T, c *kubetest.Cluster, account, release, sandboxes string) {
	t.Helper()
	tests := []struct {
		verb, resource, ns string // resource[.group][/subresource]; ns "" = cluster-wide / all namespaces
		want               bool
	}{
		{"create", "pods", sandboxes, true},
		{"patch", "pods", sandboxes, true},
		{"delete", "pods", sandboxes, true},
		{"list", "pods", sandboxes, true},
		{"create", "secrets", sandboxes, true},
		{"get", "secrets", sandboxes, true},
		{"create", "networkpolicies.networking.k8s.io", sandboxes, true},
		{"create", "persistentvolumeclaims", sandboxes, true},
		{"delete", "persistentvolumeclaims", sandboxes, true},
		// Nothing more in the sandbox namespace...
		{"list", "secrets", sandboxes, false},
		{"get", "persistentvolumeclaims", sandboxes, false},
		{"create", "pods/exec", sandboxes, false},
		{"update", "pods/ephemeralcontainers", sandboxes, false},
		{"create", "serviceaccounts/token", sandboxes, false},
		{"create", "roles.rbac.authorization.k8s.io", sandboxes, false},
		{"create", "rolebindings.rbac.authorization.k8s.io", sandboxes, false},
		{"create", "deployments.apps", sandboxes, false},
		{"delete", "resourcequotas", sandboxes, false},
		// ...nothing in its own namespace or any other...
		{"get", "secrets", release, false},
		{"create", "pods", release, false},
		{"get", "secrets", "kube-system", false},
		{"list", "pods", "", false},
		// ...and nothing cluster-wide.
		{"create", "namespaces", "", false},
		{"list", "nodes", "", false},
		{"delete", "validatingadmissionpolicies.admissionregistration.k8s.io", "", false},
		{"delete", "validatingadmissionpolicybindings.admissionregistration.k8s.io", "", false},
		{"create", "clusterrolebindings.rbac.authorization.k8s.io", "", false},
		{"impersonate", "serviceaccounts", "", false},
	}
	saNS := strings.Split(account, ":")[2]
	for _, tt := range tests {
		resource, sub, _ := strings.Cut(tt.resource, "/")
		resource, group, _ := strings.Cut(resource, ".")
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   account,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: tt.ns, Verb: tt.verb, Group: group, Resource: resource, Subresource: sub,
			},
		}}
		got, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("review %s %s: %v", tt.verb, tt.resource, err)
		}
		if got.Status.Allowed != tt.want {
			t.Errorf("%s may %s %s in %q: %v, want %v", account, tt.verb, tt.resource, tt.ns, got.Status.Allowed, tt.want)
		}
	}
}

// compliantPod is a pod the sandbox namespace must admit: the shape of the
// kube driver's pods.
func compliantPod(name string) *corev1.Pod {
	yes, no := true, false
	uid := int64(1001)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			HostUsers:                    &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "sidecar", Image: "boxkite-sidecar:test",
				Ports: []corev1.ContainerPort{{ContainerPort: 8443}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes, Privileged: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: []corev1.Volume{{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// TestAdmissionPolicy applies the chart with Pod Security Admission off,
// so that the ValidatingAdmissionPolicy alone stands between a pod and the
// node, and checks it refuses each way out in the sandbox namespace and
// only there.
func TestAdmissionPolicy(t *testing.T) {
	helmBinary(t)
	c := kubetest.Shared(t)
	objs := install(t, c, "fence", "--set", "sandboxes.podSecurity=")
	policy := find(objs, "ValidatingAdmissionPolicy")[0].name()
	sandboxes := "s-fence"
	defaultSA(t, c, sandboxes)
	pods := func(ns string) interface {
		Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
	} {
		return c.Client.CoreV1().Pods(ns)
	}
	ctx := context.Background()
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}} // admission runs, nothing is stored

	// Validation refuses privileged with allowPrivilegeEscalation false
	// before admission sees the pod, so a privileged pod leaves it unset.
	privileged := func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext.Privileged = ptr(true)
		p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
	}

	// The policy takes effect once the API server has loaded it: wait
	// for a privileged pod to be refused by it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := compliantPod("probe")
		privileged(p)
		_, err := pods(sandboxes).Create(ctx, p, dryRun)
		if err != nil && strings.Contains(err.Error(), policy) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("admission policy %s not in force after 30s; last answer: %v", policy, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	if _, err := pods(sandboxes).Create(ctx, compliantPod("good"), dryRun); err != nil {
		t.Fatalf("a pod shaped like the kube driver's is refused: %v", err)
	}
	hostPath := corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string // the policy's message
	}{
		{"privileged", privileged, "may not be privileged"},
		{"hostPath", func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, hostPath) }, "hostPath"},
		// Validation refuses host namespaces with hostUsers false before
		// admission sees the pod, so these leave it unset.
		{"hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostUsers = true, nil }, "host network"},
		{"hostPID", func(p *corev1.Pod) { p.Spec.HostPID, p.Spec.HostUsers = true, nil }, "host PID"},
		{"hostIPC", func(p *corev1.Pod) { p.Spec.HostIPC, p.Spec.HostUsers = true, nil }, "host IPC"},
		{"escalation allowed", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr(true) }, "allowPrivilegeEscalation"},
		{"escalation unset", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil }, "allowPrivilegeEscalation"},
		{"no security context", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = nil }, "allowPrivilegeEscalation"},
		{"added capability", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, "capabilities"},
		{"host port", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 8443 }, "host ports"},
		{"token mounted", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = nil }, "automountServiceAccountToken"},
		{"node user namespace", func(p *corev1.Pod) { p.Spec.HostUsers = ptr(true) }, "hostUsers: false"},
		{"user namespace unset", func(p *corev1.Pod) { p.Spec.HostUsers = nil }, "hostUsers: false"},
		{"privileged init container", func(p *corev1.Pod) {
			init := *p.Spec.Containers[0].DeepCopy()
			init.Name, init.Ports = "init", nil
			init.SecurityContext.Privileged = ptr(true)
			init.SecurityContext.AllowPrivilegeEscalation = nil
			p.Spec.InitContainers = []corev1.Container{init}
		}, "initContainers may not be privileged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := compliantPod(strings.ToLower(strings.ReplaceAll(tt.name, " ", "-")))
			tt.mutate(p)
			_, err := pods(sandboxes).Create(ctx, p, dryRun)
			if err == nil {
				t.Fatal("admitted into the sandbox namespace")
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
				t.Errorf("refused, but not by admission: %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, policy) || !strings.Contains(msg, tt.want) {
				t.Errorf("refusal does not name policy %s and %q: %v", policy, tt.want, err)
			}
			// The binding is scoped: the same pod elsewhere is no business of the policy.
			if _, err := pods("r-fence").Create(ctx, p, dryRun); err != nil {
				t.Errorf("refused outside the sandbox namespace too: %v", err)
			}
		})
	}

	// With the defaults Pod Security Admission stands behind the policy:
	// the same privileged pod is refused there as well.
	install(t, c, "psa")
	defaultSA(t, c, "s-psa")
	p := compliantPod("privileged")
	privileged(p)
	if _, err := pods("s-psa").Create(ctx, p, dryRun); err == nil {
		t.Error("a privileged pod is admitted into the default sandbox namespace")
	}
	if _, err := pods("s-psa").Create(ctx, compliantPod("good"), dryRun); err != nil {
		t.Errorf("a pod shaped like the kube driver's is refused under Pod Security restricted: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
