package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/boxkite/boxkite/server/model"
)

// AnnotationExpiresAt shows on a bound sandbox's pod when the control
// plane will end the sandbox (its expires_at, RFC 3339 in UTC), for an
// operator with kubectl. It is set at the create (or the warm claim) and
// patched at every extend, E2B timeout and resume (RecordExpiry); the
// store's row is the truth, and the control plane's reaper, not the
// kubelet, ends the pod: sandbox pods have no activeDeadlineSeconds,
// which Kubernetes would never let an extend raise (docs/kubernetes.md).
const AnnotationExpiresAt = "boxkite.dev/expires-at"

var _ model.ExpiryRecorder = (*Driver)(nil)

// formatExpiry is the annotation's value of at.
func formatExpiry(at time.Time) string { return at.UTC().Format(time.RFC3339) }

// RecordExpiry annotates sandbox id's pod with its expiry, at
// (model.ExpiryRecorder). A sandbox without a pod (paused, or gone) is
// not an error: there is nothing to show it on. A pod an older server
// started with activeDeadlineSeconds keeps it (a running pod's deadline
// cannot be lifted), and one that ends before at is logged.
func (d *Driver) RecordExpiry(ctx context.Context, id string, at time.Time) error {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelSandbox: id, LabelState: StateBound}.String()
	pods := d.client.CoreV1().Pods(d.cfg.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("record expiry of sandbox %s: list its pods: %w", id, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationExpiresAt: formatExpiry(at)}}})
	if err != nil {
		return fmt.Errorf("record expiry of sandbox %s: %w", id, err)
	}
	var errs []error
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		got, err := pods.Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("annotate pod %s: %w", p.Name, err))
			continue
		}
		if end, ok := deadlineOf(got.Spec.ActiveDeadlineSeconds, got.Status.StartTime); ok && end.Before(at) {
			d.log.Warn("an older server's pod keeps its activeDeadlineSeconds: the kubelet ends it before the sandbox's expiry",
				"sandbox", id, "pod", p.Name, "deadline", end.UTC(), "expires_at", at.UTC())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("record expiry of sandbox %s: %w", id, err)
	}
	return nil
}

// deadlineOf is when a pod with activeDeadlineSeconds secs, started at
// start, is ended by its kubelet; ok is false for a pod without one (or
// not started yet).
func deadlineOf(secs *int64, start *metav1.Time) (time.Time, bool) {
	if secs == nil || start == nil {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*secs) * time.Second), true
}
