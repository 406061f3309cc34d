package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// The warm pool is stateless: Kubernetes labels say which pods are warm,
// so any number of servers can share one pool and a restart loses nothing.
// A claim is a JSON patch that tests the pod's resourceVersion and its
// warm label before relabelling it bound to the sandbox; the API server
// applies it atomically, so of two racing claims exactly one succeeds and
// the other gets a conflict (or an invalid patch) and tries the next pod.
// The claimed sidecar then gets the sandbox's own token over POST /claim,
// and the pool token in the Secret stops working.

// refillInterval is how often Run tops the pool up; a claim nudges it too.
const refillInterval = 10 * time.Second

type pool struct {
	d      *Driver
	nudge  chan struct{}
	claims atomic.Uint64 // creates served from the pool
	misses atomic.Uint64 // creates that found no warm pod and started cold
	lost   atomic.Uint64 // claims that lost a compare-and-swap race
	ready  atomic.Int64  // warm pods ready at the last look
}

func newPool(d *Driver) *pool { return &pool{d: d, nudge: make(chan struct{}, 1)} }

// fits reports whether a warm pod can become spec's sandbox: warm pods are
// of the default size, default storage, and have no volumes.
func (p *pool) fits(spec model.Spec) bool {
	return p.d.cfg.PoolSize > 0 && (spec.Size == "" || spec.Size == api.SizeSmall) &&
		spec.StorageGB == 0 && len(spec.Volumes) == 0
}

// claim makes spec's sandbox from a warm pod. ok is false when none could
// be claimed (the caller starts cold); err only for a cancelled context.
func (p *pool) claim(ctx context.Context, spec model.Spec) (model.Endpoint, bool, error) {
	defer p.wake()
	pods, err := p.warm(ctx)
	if err != nil {
		p.d.log.Warn("warm pool: list warm pods; starting cold", "err", err)
		p.misses.Add(1)
		return model.Endpoint{}, false, ctx.Err()
	}
	for _, pod := range pods {
		won, err := p.cas(ctx, pod, spec)
		if err != nil {
			if ctx.Err() != nil {
				return model.Endpoint{}, false, ctx.Err()
			}
			p.d.log.Warn("warm pool: claim", "pod", pod.Name, "err", err)
			continue
		}
		if !won {
			p.lost.Add(1)
			continue
		}
		ep, err := p.bind(ctx, pod, spec.ID)
		if err != nil {
			// The pod is ours but unusable: it goes, and the create starts cold.
			p.d.log.Warn("warm pool: claimed pod is unusable; starting cold", "pod", pod.Name, "err", err)
			p.d.cleanup(pod.Name)
			break
		}
		p.claims.Add(1)
		return ep, true, nil
	}
	p.misses.Add(1)
	return model.Endpoint{}, false, ctx.Err()
}

// warm lists the claimable pods: warm, running with an IP, not being
// deleted, younger than PoolMaxAge, oldest first (they expire first).
func (p *pool) warm(ctx context.Context) ([]corev1.Pod, error) {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelState: StateWarm}.String()
	list, err := p.d.client.CoreV1().Pods(p.d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	now := p.d.now()
	var out []corev1.Pod
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" &&
			now.Sub(pod.CreationTimestamp.Time) < p.d.cfg.PoolMaxAge {
			out = append(out, pod)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return out, nil
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// cas relabels pod bound to spec's sandbox, annotated with its expiry,
// if nobody changed it since it was listed. won is false when another
// claim got there first.
func (p *pool) cas(ctx context.Context, pod corev1.Pod, spec model.Spec) (won bool, err error) {
	patch, err := json.Marshal(casPatch(pod.ResourceVersion, spec.ID, spec.ExpiresAt))
	if err != nil {
		return false, err
	}
	_, err = p.d.client.CoreV1().Pods(p.d.cfg.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsConflict(err), apierrors.IsInvalid(err), apierrors.IsNotFound(err):
		// A failed test op is 422 Invalid; a changed object 409; a pod
		// deleted meanwhile is simply not claimable.
		return false, nil
	default:
		return false, fmt.Errorf("patch pod %s: %w", pod.Name, err)
	}
}

// casPatch is the claim's JSON patch: test resourceVersion and the warm
// label, then relabel, and annotate the sandbox's expiry (unless zero).
func casPatch(resourceVersion, id string, expiresAt time.Time) []jsonPatchOp {
	const lbl = "/metadata/labels/"
	esc := func(k string) string { return lbl + jsonPointerEscape(k) }
	ops := []jsonPatchOp{
		{Op: "test", Path: "/metadata/resourceVersion", Value: resourceVersion},
		{Op: "test", Path: esc(LabelState), Value: StateWarm},
		{Op: "replace", Path: esc(LabelState), Value: StateBound},
		{Op: "add", Path: esc(LabelSandbox), Value: id},
		{Op: "replace", Path: "/metadata/annotations/cluster-autoscaler.kubernetes.io~1safe-to-evict", Value: "false"},
	}
	if !expiresAt.IsZero() {
		// Every warm pod has annotations (safe-to-evict), so add has a map.
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + jsonPointerEscape(AnnotationExpiresAt), Value: formatExpiry(expiresAt)})
	}
	return ops
}

func jsonPointerEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// bind hands a claimed pod to sandbox id: its Secret and NetworkPolicy get
// the sandbox label (so Delete finds them), and its sidecar swaps the pool
// token for a fresh one only the server knows.
func (p *pool) bind(ctx context.Context, pod corev1.Pod, id string) (model.Endpoint, error) {
	ns := p.d.cfg.Namespace
	sec, err := p.d.client.CoreV1().Secrets(ns).Get(ctx, secretName(pod.Name), metav1.GetOptions{})
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("get secret: %w", err)
	}
	label, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{LabelSandbox: id, LabelState: StateBound}}})
	if err != nil {
		return model.Endpoint{}, err
	}
	if _, err := p.d.client.CoreV1().Secrets(ns).Patch(ctx, sec.Name, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		return model.Endpoint{}, fmt.Errorf("label secret: %w", err)
	}
	if _, err := p.d.client.NetworkingV1().NetworkPolicies(ns).Patch(ctx, pod.Name, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		return model.Endpoint{}, fmt.Errorf("label network policy: %w", err)
	}
	ep := p.d.endpoint(&pod, newToken(), sec.Data["tls.crt"])
	// A warm pod started by an older server has no boot token: it mounts
	// its pool token as "token".
	boot := cmp.Or(string(sec.Data[bootTokenKey]), string(sec.Data[tokenKey]))
	if err := claim(ctx, ep, boot); err != nil {
		return model.Endpoint{}, err
	}
	// The Secret holds the sandbox's token from now on, as a cold pod's
	// does: the driver reaches the sidecar with it (snapshot.go). The pod
	// does not mount that key.
	tok, err := json.Marshal(map[string]any{"data": map[string][]byte{tokenKey: []byte(ep.Token)}})
	if err != nil {
		return model.Endpoint{}, err
	}
	if _, err := p.d.client.CoreV1().Secrets(ns).Patch(ctx, sec.Name, types.MergePatchType, tok, metav1.PatchOptions{}); err != nil {
		return model.Endpoint{}, fmt.Errorf("record the token in the secret: %w", err)
	}
	return ep, nil
}

// wake asks Run to refill soon.
func (p *pool) wake() {
	select {
	case p.nudge <- struct{}{}:
	default:
	}
}

// Run keeps the warm pool at PoolSize until ctx is done: every
// refillInterval and after each claim it retires warm pods past
// PoolMaxAge (they have no activeDeadlineSeconds: this is what bounds
// them) and those past PoolSize, and starts new ones for the shortfall.
// With PoolSize 0 it keeps none: warm pods a server with a larger pool
// started (before a scale-down) are retired too.
func (d *Driver) Run(ctx context.Context) {
	t := time.NewTicker(refillInterval)
	defer t.Stop()
	for {
		d.pool.refill(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.pool.nudge:
		}
	}
}

// refill starts warm pods until PoolSize are warm (ready or starting),
// in parallel, and waits for them; it retires those past PoolSize.
func (p *pool) refill(ctx context.Context) {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelState: StateWarm}.String()
	list, err := p.d.client.CoreV1().Pods(p.d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		if ctx.Err() == nil {
			p.d.log.Warn("warm pool: list", "err", err)
		}
		return
	}
	var live []corev1.Pod
	now := p.d.now()
	for _, pod := range list.Items {
		switch {
		case pod.DeletionTimestamp != nil:
		case now.Sub(pod.CreationTimestamp.Time) >= p.d.cfg.PoolMaxAge,
			pod.Status.Phase == corev1.PodFailed, pod.Status.Phase == corev1.PodSucceeded:
			p.retire(pod)
		default:
			live = append(live, pod)
		}
	}
	if len(live) > p.d.cfg.PoolSize {
		// PoolSize was lowered (a scale-down, to 0 too), or two servers
		// sharing the pool refilled it at once. The youngest go: those
		// kept are the likeliest to be ready. Every server orders alike,
		// so two trimming at once retire the same pods.
		slices.SortFunc(live, func(a, b corev1.Pod) int {
			return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
		})
		for _, pod := range live[p.d.cfg.PoolSize:] {
			p.retire(pod)
		}
		live = live[:p.d.cfg.PoolSize]
	}
	ready := 0
	for _, pod := range live {
		if pod.Status.Phase == corev1.PodRunning {
			ready++
		}
	}
	p.ready.Store(int64(ready))
	errs := make(chan error, p.d.cfg.PoolSize)
	n := 0
	for range p.d.cfg.PoolSize - len(live) {
		n++
		go func() { errs <- p.startWarm(ctx) }()
	}
	for range n {
		if err := <-errs; err != nil && ctx.Err() == nil {
			p.d.log.Warn("warm pool: start a warm pod", "err", err)
		} else if err == nil {
			p.ready.Add(1)
		}
	}
}

// retire deletes warm pod pod, listed by refill, with its Secret and
// NetworkPolicy, unless the pod changed since (a claim relabels it,
// which changes its resourceVersion): a pod another server claimed
// meanwhile is its sandbox's. The next refill looks at a changed one
// again.
func (p *pool) retire(pod corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := metav1.DeleteOptions{
		GracePeriodSeconds: ptr(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID, ResourceVersion: &pod.ResourceVersion},
	}
	err := p.d.client.CoreV1().Pods(p.d.cfg.Namespace).Delete(ctx, pod.Name, opts)
	switch {
	case apierrors.IsConflict(err):
		return
	case err != nil && !apierrors.IsNotFound(err):
		p.d.log.Warn("warm pool: retire a warm pod", "pod", pod.Name, "err", err)
		return
	}
	if err := p.d.deletePod(ctx, pod.Name); err != nil {
		p.d.log.Warn("warm pool: retire a warm pod", "pod", pod.Name, "err", err)
	}
}

// startWarm starts one warm pod and waits until its sidecar answers.
func (p *pool) startWarm(ctx context.Context) error {
	plan := podPlan{
		name: "sbx-warm-" + randomSuffix(), size: api.SizeSmall,
	}
	if _, err := p.d.start(ctx, plan, ""); err != nil {
		p.d.cleanup(plan.name)
		return err
	}
	return nil
}

// WriteMetrics writes the pool's metrics in the Prometheus text format.
func (d *Driver) WriteMetrics(w io.Writer) {
	fmt.Fprintf(w, "# HELP boxkite_kube_warm_pool_ready Warm pods ready to claim at the last look.\n# TYPE boxkite_kube_warm_pool_ready gauge\nboxkite_kube_warm_pool_ready %d\n", d.pool.ready.Load())
	fmt.Fprintf(w, "# HELP boxkite_kube_warm_pool_target Warm pods the pool keeps.\n# TYPE boxkite_kube_warm_pool_target gauge\nboxkite_kube_warm_pool_target %d\n", d.cfg.PoolSize)
	for _, m := range []struct {
		name, help string
		v          uint64
	}{
		{"boxkite_kube_warm_pool_claims_total", "Creates served from a warm pod.", d.pool.claims.Load()},
		{"boxkite_kube_warm_pool_misses_total", "Creates that found no warm pod and started cold.", d.pool.misses.Load()},
		{"boxkite_kube_warm_pool_lost_races_total", "Claims that lost the compare-and-swap to another.", d.pool.lost.Load()},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", m.name, m.help, m.name, m.name, m.v)
	}
}

// PoolStats is a snapshot of the warm pool's counters.
type PoolStats struct {
	Ready                     int // warm pods ready at the last look
	Claims, Misses, LostRaces uint64
}

// PoolStats returns the warm pool's counters.
func (d *Driver) PoolStats() PoolStats {
	return PoolStats{Ready: int(d.pool.ready.Load()), Claims: d.pool.claims.Load(), Misses: d.pool.misses.Load(), LostRaces: d.pool.lost.Load()}
}
