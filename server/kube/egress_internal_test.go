package kube

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestNetworkPolicyEgress: a pod without egress may reach nothing; one
// granted egress may reach the control plane's pods on its proxy port only.
func TestNetworkPolicyEgress(t *testing.T) {
	d, _ := newFakeDriver(t, Config{ControlPlaneLabels: map[string]string{"app": "cp"}})
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(4321)
	tests := []struct {
		name   string
		egress string
		want   []networkingv1.NetworkPolicyEgressRule
	}{
		{"none", "", nil},
		{"granted", "10.0.0.5:4321", []networkingv1.NetworkPolicyEgressRule{{
			To: []networkingv1.NetworkPolicyPeer{{
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cp"}},
				NamespaceSelector: &metav1.LabelSelector{},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := podPlan{name: "sbx-x", sandbox: "x", size: "small", egress: tt.egress}
			np, err := d.networkPolicy(p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, np.Spec.Egress); diff != "" {
				t.Errorf("egress rules (-want +got):\n%s", diff)
			}
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
				t.Errorf("policy types %v lack Egress: the rules would not restrict", np.Spec.PolicyTypes)
			}
			pod, err := d.pod(p)
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Join(pod.Spec.Containers[0].Args, " ")
			if got := pod.Annotations[AnnotationEgress]; got != tt.egress {
				t.Errorf("egress annotation = %q, want %q", got, tt.egress)
			}
			if has := strings.Contains(args, "--egress-proxy "+tt.egress); has != (tt.egress != "") {
				t.Errorf("sidecar args %q: --egress-proxy %v, want %v", args, has, tt.egress != "")
			}
		})
	}
	if _, err := d.networkPolicy(podPlan{name: "sbx-x", egress: "no-port"}); err == nil {
		t.Error("a bad egress address made a policy")
	}
}

// TestNetworkPolicyControlPlaneNamespace: with the control plane's
// namespace known, only its pods there may reach the sidecar or the proxy.
func TestNetworkPolicyControlPlaneNamespace(t *testing.T) {
	d, _ := newFakeDriver(t, Config{ControlPlaneLabels: map[string]string{"app": "cp"}, ControlPlaneNamespace: "boxkite"})
	np, err := d.networkPolicy(podPlan{name: "sbx-x", sandbox: "x", size: "small", egress: "10.0.0.5:4321"})
	if err != nil {
		t.Fatal(err)
	}
	want := networkingv1.NetworkPolicyPeer{
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cp"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "boxkite"}},
	}
	for what, peers := range map[string][]networkingv1.NetworkPolicyPeer{
		"ingress": np.Spec.Ingress[0].From, "egress": np.Spec.Egress[0].To,
	} {
		if diff := cmp.Diff([]networkingv1.NetworkPolicyPeer{want}, peers); diff != "" {
			t.Errorf("%s peers (-want +got):\n%s", what, diff)
		}
	}
}

// TestEgressCreateErrors: without an egress host a create with grants is
// refused, and a failed create closes the proxy's listener.
func TestEgressCreateErrors(t *testing.T) {
	serve := func(got *net.Listener) func(net.Listener) { return func(l net.Listener) { *got = l } }
	t.Run("no egress host", func(t *testing.T) {
		d, cs := newFakeDriver(t, Config{})
		var l net.Listener
		_, err := d.Create(context.Background(), model.Spec{ID: "x", Egress: serve(&l)})
		if err == nil || !strings.Contains(err.Error(), "--egress-host") {
			t.Errorf("create = %v, want the egress host asked for", err)
		}
		if l != nil || len(leftovers(t, cs)) != 0 {
			t.Errorf("left a listener %v and %v", l, leftovers(t, cs))
		}
	})
	t.Run("pod never runs", func(t *testing.T) {
		d, cs := newFakeDriver(t, Config{EgressHost: "127.0.0.1"})
		d.cfg.ReadyTimeout = 100 * time.Millisecond // the fake runs no pod
		var l net.Listener
		if _, err := d.Create(context.Background(), model.Spec{ID: "x", Egress: serve(&l)}); err == nil {
			t.Fatal("create succeeded without a running pod")
		}
		if l == nil {
			t.Fatal("the proxy was not served")
		}
		var dl net.Dialer
		if c, err := dl.DialContext(context.Background(), "tcp", l.Addr().String()); err == nil {
			c.Close()
			t.Error("the proxy still listens after the failed create")
		}
		if left := leftovers(t, cs); len(left) != 0 {
			t.Errorf("left %v", left)
		}
	})
}
