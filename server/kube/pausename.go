package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/boxkite/boxkite/server/model"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The server's Role may get Secrets by name but never list them (the
// chart's sandbox-manager Role: a stolen server credential cannot browse
// the sidecars' tokens), so the driver finds a sandbox's Secret by name:
// a running sandbox's is its pod's (pods are listed by label), a paused
// one's is secretName(podName(id)), because Pause moves a claimed warm
// pod's Secret and NetworkPolicy to the sandbox's own pod name.

// sandboxPodNames are the pods sandbox id may have: its own name first
// (a cold pod's, and a paused sandbox's), then those labelled with it.
func (d *Driver) sandboxPodNames(ctx context.Context, id string) ([]string, error) {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelSandbox: id}.String()
	pods, err := d.client.CoreV1().Pods(d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	names := []string{podName(id)}
	for _, p := range pods.Items {
		if !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// sandboxSecret is the Secret of sandbox id's pod (running or paused),
// and the names sandboxPodNames found.
func (d *Driver) sandboxSecret(ctx context.Context, id string) (*corev1.Secret, []string, error) {
	names, err := d.sandboxPodNames(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range names {
		sec, err := d.client.CoreV1().Secrets(d.cfg.Namespace).Get(ctx, secretName(name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("get secret: %w", err)
		}
		if sec.DeletionTimestamp == nil && sec.Labels[LabelSandbox] == id {
			return sec, names, nil
		}
	}
	// Pause and resume need it: without it the sandbox is gone.
	return nil, names, fmt.Errorf("no secret of the sandbox: %w", model.ErrSandboxGone)
}

// renamed is saved as pod own: its name, pod label and sidecar Secret.
func renamed(saved pausedPod, own string) pausedPod {
	old := saved.Name
	saved.Name, saved.Labels = own, relabel(saved.Labels, own)
	saved.Spec.Volumes = slices.Clone(saved.Spec.Volumes)
	for i, v := range saved.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secretName(old) {
			s := *v.Secret
			s.SecretName = secretName(own)
			saved.Spec.Volumes[i].Secret = &s
		}
	}
	return saved
}

// relabel is l with its pod label set to pod.
func relabel(l map[string]string, pod string) map[string]string {
	l = maps.Clone(l)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelPod] = pod
	return l
}

// keepUnderOwnName copies a claimed warm pod's NetworkPolicy and Secret to
// the sandbox's own pod name own, with no owner (they outlive the pod),
// the Secret annotated with what to start again. The policy goes first:
// the Secret is what marks the sandbox paused. A copy a crash left is
// taken as it is.
func (d *Driver) keepUnderOwnName(ctx context.Context, pod *corev1.Pod, sec *corev1.Secret, own string, annotations map[string]string) error {
	ns := d.cfg.Namespace
	pol, err := d.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get network policy: %w", err)
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: own, Namespace: ns, Labels: relabel(pol.Labels, own), Annotations: pol.Annotations},
		Spec:       *pol.Spec.DeepCopy(),
	}
	np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{LabelPod: own}}
	if _, err := d.client.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("copy network policy: %w", err)
	}
	ann := maps.Clone(sec.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	maps.Copy(ann, annotations)
	cp := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName(own), Namespace: ns, Labels: relabel(sec.Labels, own), Annotations: ann},
		Type:       sec.Type,
		Data:       sec.Data,
	}
	if _, err := d.client.CoreV1().Secrets(ns).Create(ctx, cp, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("copy secret: %w", err)
	}
	return nil
}
