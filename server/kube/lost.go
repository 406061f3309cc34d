package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.LossWatcher = (*Driver)(nil)

// WatchLost implements model.LossWatcher: it watches the bound sandbox
// pods and reports one that is deleted, or that stops for good (failed,
// succeeded, past its activeDeadlineSeconds), by its sandbox label. The
// server's own deletions are reported too; it tells them apart by its
// records. Each event of a pod also drops the sidecar Stats kept for its
// sandbox when the pod is no longer the one kept (keptSidecars.observe).
// It returns when ctx is done (nil) or the watch ends (an error).
//
// A pod that went while no watch ran (this server cut off from the API
// server, a watch that ended) sends no event, and the next call's list
// no longer has it: a sandbox that had a pod when the previous call
// ended and has none now is reported too.
func (d *Driver) WatchLost(ctx context.Context, lost func(id string)) error {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelState: StateBound}.String()
	pods := d.client.CoreV1().Pods(d.cfg.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list sandbox pods: %w", err)
	}
	reported := map[string]bool{}
	reportID := func(id string) {
		if id == "" || reported[id] {
			return
		}
		reported[id] = true
		lost(id)
	}
	report := func(p *corev1.Pod) { reportID(p.Labels[LabelSandbox]) }
	// The sandboxes with a pod, kept for the next call when this one ends.
	alive := map[string]bool{}
	defer func() {
		d.watchedMu.Lock()
		d.watched = alive
		d.watchedMu.Unlock()
	}()
	for i := range list.Items {
		p := &list.Items[i]
		if stopped(p) {
			report(p)
		} else {
			alive[p.Labels[LabelSandbox]] = true
		}
	}
	d.watchedMu.Lock()
	before := d.watched
	d.watchedMu.Unlock()
	for id := range before {
		if !alive[id] {
			reportID(id)
		}
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watch sandbox pods: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("watch of sandbox pods ended")
			}
			switch ev.Type {
			case watch.Error:
				return fmt.Errorf("watch sandbox pods: %w", apierrors.FromObject(ev.Object))
			case watch.Deleted:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					d.kept.observe(p, true, d.endpoint(p, "", nil).Address)
					delete(alive, p.Labels[LabelSandbox])
					report(p)
				}
			case watch.Added, watch.Modified:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					d.kept.observe(p, false, d.endpoint(p, "", nil).Address)
					if stopped(p) {
						delete(alive, p.Labels[LabelSandbox])
						report(p)
					} else {
						alive[p.Labels[LabelSandbox]] = true
					}
				}
			}
		}
	}
}

var _ model.LossSweeper = (*Driver)(nil)

// LossSweepInterval implements model.LossSweeper: Config.LostSweep.
func (d *Driver) LossSweepInterval() time.Duration { return d.cfg.LostSweep }

// livePageSize is how many pods one page of Live's list holds.
const livePageSize = 500

// Live implements model.LossSweeper: the sandboxes whose bound pod runs
// or is starting (not deleted, not stopped), by their sandbox label, from
// a list of the bound pods in pages of livePageSize. A paused sandbox has
// none; the server sweeps only active ones.
func (d *Driver) Live(ctx context.Context) (map[string]bool, error) {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelState: StateBound}.String()
	pods := d.client.CoreV1().Pods(d.cfg.Namespace)
	live := map[string]bool{}
	opts := metav1.ListOptions{LabelSelector: sel, Limit: livePageSize}
	for {
		list, err := pods.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list sandbox pods: %w", err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			if id := p.Labels[LabelSandbox]; id != "" && p.DeletionTimestamp == nil && !stopped(p) {
				live[id] = true
			}
		}
		if list.Continue == "" {
			return live, nil
		}
		opts.Continue = list.Continue
	}
}

// stopped reports whether a pod will never run its sidecar again.
func stopped(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// Probe reports whether sandbox id has a pod that runs or is starting: a
// pod deleted under a paused sandbox, or replaced by its resume, is not
// its loss (model.Prober).
func (d *Driver) Probe(ctx context.Context, id string) (bool, error) {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelSandbox: id, LabelState: StateBound}.String()
	pods, err := d.client.CoreV1().Pods(d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return false, fmt.Errorf("probe sandbox %s: %w", id, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && !stopped(p) {
			return true, nil
		}
	}
	return false, nil
}
