package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pause on the kube driver (issue 22) is the filesystem mode only: the
// workspace is copied out through the sidecar (as a snapshot is, into
// SnapshotDir), the pod is deleted — its processes end and its memory is
// released — and its Secret and NetworkPolicy are kept, the Secret
// annotated with the pod it had and the copy's key. Resume creates that
// pod again (same name, token and certificate; a new address, which
// Endpoint reports), copies the workspace back in and drops the copy.
// freeze and checkpoint need a node's freezer or CRIU, which the control
// plane does not reach.

// Annotations of a paused sandbox's Secret.
const (
	annotationPausedPod      = "boxkite.dev/paused-pod"      // the pod, as JSON
	annotationPausedSnapshot = "boxkite.dev/paused-snapshot" // the workspace copy's key
)

// PauseModes reports what works on this driver.
func (d *Driver) PauseModes() map[string]string {
	fs := ""
	if d.cfg.SnapshotDir == "" {
		fs = "the kube driver has no snapshot directory to keep the workspace in"
	}
	return map[string]string{
		api.PauseFreeze:     "a pod's processes cannot be frozen from the control plane (no freezer on the node through the Kubernetes API)",
		api.PauseFilesystem: fs,
		api.PauseCheckpoint: "CRIU checkpoints are not reachable through the Kubernetes API",
	}
}

// pausedPod is what the Secret keeps of a paused sandbox's pod.
type pausedPod struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Spec        corev1.PodSpec    `json:"spec"`
}

// Pause copies sandbox id's workspace out and deletes its pod. A paused
// sandbox is left as it is.
func (d *Driver) Pause(ctx context.Context, id, mode string) error {
	if why := d.PauseModes()[mode]; why != "" || mode != api.PauseFilesystem {
		return fmt.Errorf("pause sandbox %s: mode %s: %s", id, mode, why)
	}
	defer d.kept.forget(id, nil) // its pod goes, kept before or during the pause
	sec, names, err := d.sandboxSecret(ctx, id)
	if err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	if sec.Annotations[annotationPausedPod] != "" {
		// Paused already; a crash may have come before the pod went.
		return d.deleteLeftPods(ctx, id, sec.Labels[LabelPod], names)
	}
	pod, err := d.client.CoreV1().Pods(d.cfg.Namespace).Get(ctx, sec.Labels[LabelPod], metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("pause sandbox %s: get pod: %w", id, err)
	}
	if pod.Annotations[AnnotationEgress] != "" {
		// The API's answer: its proxy port would have to outlive the pod.
		return api.Errorf(http.StatusUnprocessableEntity, api.CodeNotSupported,
			"sandbox %s was granted egress, and a sandbox granted egress cannot be paused on the kube driver yet", id).
			WithHint("keep it running, or take a snapshot and delete it: a restore starts a new sandbox with its files and grants")
	}
	ref, err := d.Snapshot(ctx, id, true, nil)
	if err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	if d.cfg.PauseCopiedForTests != nil {
		d.cfg.PauseCopiedForTests(id)
	}
	if err := d.keepPaused(ctx, id, pod, sec, ref.Key); err != nil {
		_ = d.DeleteSnapshot(ctx, ref.Key)
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	del := d.deletePod // a moved warm pod's Secret and policy go with it
	if pod.Name == podName(id) {
		del = d.deletePodOnly
	}
	if err := del(ctx, pod.Name); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	return nil
}

// keepPaused keeps pod's Secret and NetworkPolicy past it under the
// sandbox's own pod name (no owner, so the garbage collector leaves
// them), the Secret saying what to start again and where the workspace's
// copy is.
func (d *Driver) keepPaused(ctx context.Context, id string, pod *corev1.Pod, sec *corev1.Secret, key string) error {
	spec := *pod.Spec.DeepCopy()
	spec.NodeName = "" // let the scheduler place it again
	// Resume claims the pod again, as start does; but an older server's
	// claimed warm pod mounts "token" and has no boot token: its sidecar
	// starts again as the sandbox's, with the token its Secret now holds.
	for i := range spec.Containers {
		if len(sec.Data[bootTokenKey]) == 0 {
			spec.Containers[i].Args = slices.DeleteFunc(spec.Containers[i].Args, func(a string) bool { return a == "--claimable" })
		}
	}
	saved := pausedPod{Name: pod.Name, Labels: pod.Labels, Annotations: pod.Annotations, Spec: spec}
	own := podName(id)
	if pod.Name != own {
		saved = renamed(saved, own)
	}
	raw, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	annotations := map[string]string{annotationPausedPod: string(raw), annotationPausedSnapshot: key}
	if pod.Name != own {
		return d.keepUnderOwnName(ctx, pod, sec, own, annotations)
	}
	keep, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": nil, "annotations": annotations}})
	if err != nil {
		return err
	}
	ns := d.cfg.Namespace
	if _, err := d.client.CoreV1().Secrets(ns).Patch(ctx, sec.Name, types.MergePatchType, keep, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("keep its secret: %w", err)
	}
	orphan := []byte(`{"metadata":{"ownerReferences":null}}`)
	if _, err := d.client.NetworkingV1().NetworkPolicies(ns).Patch(ctx, pod.Name, types.MergePatchType, orphan, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("keep its network policy: %w", err)
	}
	return nil
}

// deleteLeftPods deletes the pods a paused sandbox still has: the one of
// its own name alone (its Secret and policy are the paused sandbox's), a
// moved warm pod with its Secret and policy.
func (d *Driver) deleteLeftPods(ctx context.Context, id, own string, names []string) error {
	for _, name := range names {
		del := d.deletePod
		if name == own {
			del = d.deletePodOnly
		}
		if err := del(ctx, name); err != nil {
			return fmt.Errorf("pause sandbox %s: %w", id, err)
		}
	}
	return nil
}

// deletePodOnly deletes pod name, now; an absent one is not an error.
func (d *Driver) deletePodOnly(ctx context.Context, name string) error {
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}
	if err := d.client.CoreV1().Pods(d.cfg.Namespace).Delete(ctx, name, now); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	return nil
}

// Resume starts a paused sandbox's pod again and copies its workspace
// back. A running sandbox is left as it is. egress is not used: a sandbox
// granted egress is not paused on this driver.
func (d *Driver) Resume(ctx context.Context, id string, _ func(net.Listener)) error {
	d.kept.forget(id, nil) // a pod gone with the pause, if anything kept it since
	sec, _, err := d.sandboxSecret(ctx, id)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	raw, key := sec.Annotations[annotationPausedPod], sec.Annotations[annotationPausedSnapshot]
	if raw == "" {
		return nil
	}
	var saved pausedPod
	if err := json.Unmarshal([]byte(raw), &saved); err != nil {
		return fmt.Errorf("resume sandbox %s: the paused pod: %w", id, err)
	}
	// Before a pod: a replica without the copy would start one it
	// cannot fill.
	if has, err := d.HasSnapshot(ctx, key); err != nil || !has {
		return fmt.Errorf("resume sandbox %s: its workspace copy %s: %w", id, key, cmp.Or(err, model.ErrCopyElsewhere))
	}
	ns := d.cfg.Namespace
	boot, err := d.newBootToken(ctx, sec)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: saved.Name, Namespace: ns, Labels: saved.Labels, Annotations: saved.Annotations},
		Spec:       saved.Spec,
	}
	if boot != "" {
		// An older server's Pause took --claimable away.
		pod.Spec = claimable(pod.Spec)
	}
	// An older server's pod had a deadline, which would count again from
	// this pod's start; the reaper is the timer now (pod).
	pod.Spec.ActiveDeadlineSeconds = nil
	created, err := d.createAgain(ctx, pod)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	d.adopt(ctx, created)
	ep, err := d.waitReady(ctx, saved.Name, string(sec.Data[tokenKey]), sec.Data["tls.crt"])
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	if boot != "" {
		if err := claim(ctx, ep, boot); err != nil {
			return fmt.Errorf("resume sandbox %s: %w", id, err)
		}
	}
	if err := d.restore(ctx, ep, key); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	done := []byte(`{"metadata":{"annotations":{"` + annotationPausedPod + `":null,"` + annotationPausedSnapshot + `":null}}}`)
	if _, err := d.client.CoreV1().Secrets(ns).Patch(ctx, sec.Name, types.MergePatchType, done, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("resume sandbox %s: clear the paused pod: %w", id, err)
	}
	if err := d.DeleteSnapshot(ctx, key); err != nil {
		d.log.Warn("delete a resumed sandbox's workspace copy", "sandbox", id, "err", err)
	}
	return nil
}

// claimable is spec with every container's sidecar started --claimable.
func claimable(spec corev1.PodSpec) corev1.PodSpec {
	spec.Containers = slices.Clone(spec.Containers)
	for i, c := range spec.Containers {
		if !slices.Contains(c.Args, "--claimable") {
			spec.Containers[i].Args = append(slices.Clip(c.Args), "--claimable")
		}
	}
	return spec
}

// newBootToken gives a paused sandbox's Secret a fresh boot token for the
// pod Resume starts, so the one its last pod mounted (which its commands
// could read) claims nothing. It returns "" for a Secret without one (an
// older server's pod, which mounts the sandbox's token and is not claimed).
func (d *Driver) newBootToken(ctx context.Context, sec *corev1.Secret) (string, error) {
	if len(sec.Data[bootTokenKey]) == 0 {
		return "", nil
	}
	boot := newToken()
	patch, err := json.Marshal(map[string]any{"data": map[string][]byte{bootTokenKey: []byte(boot)}})
	if err != nil {
		return "", err
	}
	if _, err := d.client.CoreV1().Secrets(d.cfg.Namespace).Patch(ctx, sec.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("renew the boot token: %w", err)
	}
	return boot, nil
}

// createAgain creates pod, waiting out the deletion of its namesake.
func (d *Driver) createAgain(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ReadyTimeout)
	defer cancel()
	for {
		created, err := d.client.CoreV1().Pods(d.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return nil, fmt.Errorf("create pod: %w", quotaRefusal(err))
			}
			return created, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("create pod: the paused pod %s is still being deleted: %w", pod.Name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Endpoint is how sandbox id's sidecar is reached now: a resumed pod has a
// new address (model.EndpointDriver).
func (d *Driver) Endpoint(ctx context.Context, id string) (model.Endpoint, error) {
	return d.sandboxEndpoint(ctx, id)
}
