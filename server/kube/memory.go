package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/boxkite/boxkite/server/model"
)

// AnnotationOOMKillsSeen is, on a sandbox's pod, how many of the OOM
// kills its container's cgroup counted (GET /usage's oom_kills) the
// control plane has pinned on a command that ended killed (MemoryKilled).
// It is kept on the pod, not in a server's memory, so a restarted server
// or another replica does not pin an old kill on a later kill -9; a new
// pod (a resume) has a new cgroup and no annotation, both from 0.
const AnnotationOOMKillsSeen = "boxkite.dev/oom-kills-seen"

// memoryKillTries bounds MemoryKilled's compare-and-swap of the
// annotation against concurrent writers of the pod (another command's
// check, an expiry's annotation).
const memoryKillTries = 5

var _ model.MemoryKillDriver = (*Driver)(nil)

// MemoryKilled implements model.MemoryKillDriver: the sandbox's pod's
// sidecar reads its container cgroup's OOM-kill count (GET /usage), and
// a count above the pod's AnnotationOOMKillsSeen is a kill not yet
// pinned on a command: the annotation is moved up to it with a
// compare-and-swap on the pod's resourceVersion, so of two servers (or
// two commands) asking at once only one is told. Asked only for a
// command that ended killed; a count of 0 (no kill, or a sidecar older
// than oom_kills) costs no API request.
//
// The count is the sidecar's, which runs in the pod with the sandbox's
// code: a sandbox could make it up, and would mislabel only its own
// commands' ends (docs/errors.md).
func (d *Driver) MemoryKilled(ctx context.Context, id string) (bool, error) {
	u, s, err := d.usage(ctx, id)
	if isAPIError(err) || errors.Is(err, model.ErrNoStats) {
		return false, nil // a sidecar older than /usage, or no cgroup it can read: cannot tell
	}
	if err != nil {
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, err)
	}
	if u.OOMKills <= 0 {
		return false, nil
	}
	pods := d.client.CoreV1().Pods(d.cfg.Namespace)
	for range memoryKillTries {
		pod, err := pods.Get(ctx, s.podName, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("sandbox memory kills %s: get its pod: %w", id, err)
		}
		if pod.UID != s.pod {
			return false, nil // another pod of the sandbox since: its count was not this one's
		}
		seen, _ := strconv.ParseInt(pod.Annotations[AnnotationOOMKillsSeen], 10, 64) // absent or garbled: none seen
		if u.OOMKills <= seen {
			return false, nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": pod.ResourceVersion, // the swap's compare: 409 if it changed
			"annotations":     map[string]string{AnnotationOOMKillsSeen: strconv.FormatInt(u.OOMKills, 10)},
		}})
		if err != nil {
			return false, fmt.Errorf("sandbox memory kills %s: %w", id, err)
		}
		_, err = pods.Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			return true, nil
		}
		if !apierrors.IsConflict(err) {
			return false, fmt.Errorf("sandbox memory kills %s: annotate its pod: %w", id, err)
		}
	}
	return false, fmt.Errorf("sandbox memory kills %s: its pod changed %d times meanwhile", id, memoryKillTries)
}
