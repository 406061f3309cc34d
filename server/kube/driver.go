package kube

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Defaults for zero Config fields.
const (
	DefaultNamespace    = "boxkite-sandboxes"
	DefaultImage        = "ghcr.io/boxkite/boxkite-sidecar:latest"
	DefaultSidecarPort  = 8443
	DefaultStorageGB    = 5
	DefaultTmpSize      = "1Gi"
	DefaultReadyTimeout = 2 * time.Minute
	DefaultLostSweep    = 30 * time.Second
)

// Config configures the kube driver.
type Config struct {
	Namespace       string // where sandboxes run; DefaultNamespace when ""
	Image           string // the sandbox image, with boxkite-sidecar on its PATH
	ImagePullPolicy corev1.PullPolicy
	// ImagePullSecrets name Secrets in Namespace the kubelet pulls Image
	// with (a private registry); the server never reads them.
	ImagePullSecrets []string
	RuntimeClassName string // e.g. "gvisor" or "kata"; "" means the cluster default
	SidecarPort      int32  // the sidecar's TLS port in the pod
	StorageGB        float64
	TmpSize          string          // sizeLimit of /tmp, a quantity
	StorageClass     string          // of volume claims; "" means the cluster default
	Sizes            map[string]Size // nil means DefaultSizes()
	// ControlPlaneLabels select the pods allowed to reach sidecars; nil
	// means app.kubernetes.io/name=boxkite-server.
	ControlPlaneLabels map[string]string
	// ControlPlaneNamespace, when set, is the only namespace those pods
	// are matched in; "" matches them in any namespace (a server outside
	// the cluster, or one that cannot tell where it runs).
	ControlPlaneNamespace string
	// ReadyTimeout bounds Create's wait for the pod to run and its sidecar
	// to answer /health.
	ReadyTimeout time.Duration
	// PoolSize is how many warm pods of the default size to keep ready; 0
	// means no pool. PoolMaxAge retires warm pods older than it.
	PoolSize   int
	PoolMaxAge time.Duration
	// EgressHost is the address sandbox pods reach this server on for
	// egress (in a cluster the server pod's IP); a sandbox granted egress
	// gets its own proxy port there. "" refuses egress grants.
	EgressHost string
	Log        *slog.Logger
	// SnapshotDir holds snapshots, copies of sandboxes' workspaces
	// (snapshot.go); "" refuses snapshots, restores and forks.
	SnapshotDir string

	// HostUsers runs sandbox pods in their node's user namespace
	// (hostUsers: true). False, the default, gives each pod a user
	// namespace of its own (hostUsers: false): the kubelet maps it to a
	// 65536-id host range no other pod uses and idmaps its volumes, so a
	// pod's ids, and the kernel's per-user counters (inotify, pipe
	// buffers, descriptors in flight), are its own (issue 17, finding 2).
	// Nodes need Linux 6.3 or later and a runtime with user namespace
	// support (containerd 2.0 or CRI-O 1.25 with runc 1.2 or crun 1.9);
	// set HostUsers where they lack it (a sandboxed runtime, gVisor or
	// Kata, keeps a kernel of its own anyway).
	HostUsers bool

	// LostSweep is how often the server compares its active sandboxes
	// with the pods (model.LossSweeper): the losses a stalled watch of
	// them missed. 0 means DefaultLostSweep; negative, never.
	LostSweep time.Duration

	// PauseCopiedForTests, when set, runs in Pause once sandbox id's
	// workspace is copied out, before its pod is marked paused and
	// deleted: a test holds a pause there (a pause on one server while
	// another deletes the sandbox).
	PauseCopiedForTests func(id string)
	// SnapshotClaimedForTests, when set, runs in Snapshot once a
	// snapshot of sandbox id claimed its key, before its copy is put
	// under it: a test holds a take there (its snapshot deleted
	// meanwhile, its server dying after the copy is in place).
	SnapshotClaimedForTests func(id string)
}

// Driver is model.Driver on Kubernetes. Build it with New; Run keeps the
// warm pool filled.
type Driver struct {
	cfg    Config
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time
	pool   *pool

	egress egress.Listeners // the egress proxies' listeners (egress.go)
	kept   keptSidecars     // sandboxes' sidecars Stats reaches (kept.go)

	metaCodec runtime.Decoder // Live's metadata-only lists (lost.go)
	livePage  int64           // pods per page of Live's list: livePageSize, fewer in a test

	watchedMu sync.Mutex
	watched   map[string]bool // sandboxes with a pod at the last WatchLost's end (lost.go)
}

// New returns a driver that makes sandboxes through client.
func New(client kubernetes.Interface, cfg Config) (*Driver, error) {
	cfg.Namespace = cmp.Or(cfg.Namespace, DefaultNamespace)
	cfg.Image = cmp.Or(cfg.Image, DefaultImage)
	cfg.ImagePullPolicy = cmp.Or(cfg.ImagePullPolicy, corev1.PullIfNotPresent)
	cfg.SidecarPort = cmp.Or(cfg.SidecarPort, DefaultSidecarPort)
	cfg.StorageGB = cmp.Or(cfg.StorageGB, DefaultStorageGB)
	cfg.TmpSize = cmp.Or(cfg.TmpSize, DefaultTmpSize)
	cfg.ReadyTimeout = cmp.Or(cfg.ReadyTimeout, DefaultReadyTimeout)
	cfg.PoolMaxAge = cmp.Or(cfg.PoolMaxAge, 6*time.Hour)
	cfg.LostSweep = cmp.Or(cfg.LostSweep, DefaultLostSweep)
	if cfg.Sizes == nil {
		cfg.Sizes = DefaultSizes()
	}
	if cfg.ControlPlaneLabels == nil {
		cfg.ControlPlaneLabels = map[string]string{"app.kubernetes.io/name": "boxkite-server"}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.PoolSize < 0 || cfg.StorageGB < 0 {
		return nil, errors.New("kube driver: pool size and storage must not be negative")
	}
	if _, err := resource.ParseQuantity(cfg.TmpSize); err != nil {
		return nil, fmt.Errorf("kube driver: tmp size: %w", err)
	}
	metaCodec, err := newMetaCodec()
	if err != nil {
		return nil, fmt.Errorf("kube driver: %w", err)
	}
	d := &Driver{cfg: cfg, client: client, log: cfg.Log, now: time.Now, metaCodec: metaCodec, livePage: livePageSize}
	d.pool = newPool(d)
	return d, nil
}

// Namespace is where the driver's sandboxes live.
func (d *Driver) Namespace() string { return d.cfg.Namespace }

// Create makes the sandbox from a warm pod when one fits, else a cold one,
// and returns once its sidecar answers /health over the pinned TLS.
func (d *Driver) Create(ctx context.Context, spec model.Spec) (model.Endpoint, error) {
	size := cmp.Or(spec.Size, api.SizeSmall)
	if _, ok := d.cfg.Sizes[size]; !ok {
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: unknown size %q", spec.ID, size)
	}
	if spec.ImageRoot != "" {
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: host image roots are for the local driver", spec.ID)
	}
	if spec.FromSnapshot != "" {
		// Before a pod: a replica without the tar would start one it
		// cannot fill.
		if has, err := d.HasSnapshot(ctx, spec.FromSnapshot); err != nil || !has {
			return model.Endpoint{}, fmt.Errorf("create sandbox %s from snapshot %s: %w", spec.ID, spec.FromSnapshot, cmp.Or(err, model.ErrCopyElsewhere))
		}
	}
	if spec.Egress == nil && d.pool.fits(spec) {
		ep, ok, err := d.pool.claim(ctx, spec)
		if err != nil {
			return model.Endpoint{}, err
		}
		if ok {
			return d.fill(ctx, spec, ep)
		}
	}
	p := podPlan{
		name: podName(spec.ID), sandbox: spec.ID, size: size, storageGB: spec.StorageGB,
		expiresAt: spec.ExpiresAt, volumes: spec.Volumes,
	}
	if spec.Egress != nil {
		// A warm pod's sidecar started without the proxy's address, so
		// a sandbox granted egress always starts cold.
		l, err := d.listenEgress(net.JoinHostPort(d.cfg.EgressHost, "0"))
		if err != nil {
			return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
		}
		// The configured host, not the listener's address: ReopenEgress
		// compares the annotation with it.
		p.egress = net.JoinHostPort(d.cfg.EgressHost, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
		d.serveEgress(spec.ID, l, spec.Egress)
	}
	token := newToken()
	ep, err := d.start(ctx, p, token)
	if err != nil {
		d.egress.Close(spec.ID)
		d.cleanup(p.name)
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	return d.fill(ctx, spec, ep)
}

// fill copies the snapshot a sandbox starts from into its workspace; a
// sandbox it fails for is deleted.
func (d *Driver) fill(ctx context.Context, spec model.Spec, ep model.Endpoint) (model.Endpoint, error) {
	if spec.FromSnapshot == "" {
		return ep, nil
	}
	if err := d.restore(ctx, ep, spec.FromSnapshot); err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := d.Delete(dctx, spec.ID); derr != nil {
			d.log.Error("delete a sandbox whose snapshot could not be copied in", "sandbox", spec.ID, "err", derr)
		}
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	return ep, nil
}

// podName is a cold sandbox's pod; ids are lower-case hex, safe in a DNS label.
func podName(id string) string { return "sbx-" + id }

// start creates the Secret, NetworkPolicy and Pod of p, waits until its
// sidecar answers /health, and claims it with token, the sandbox's. A warm
// pod (token "") is claimed by its bind.
func (d *Driver) start(ctx context.Context, p podPlan, token string) (model.Endpoint, error) {
	cert, err := newCert(p.name, d.now())
	if err != nil {
		return model.Endpoint{}, err
	}
	pod, err := d.pod(p)
	if err != nil {
		return model.Endpoint{}, err
	}
	np, err := d.networkPolicy(p)
	if err != nil {
		return model.Endpoint{}, err
	}
	ns := d.cfg.Namespace
	boot := newToken()
	if _, err := d.client.CoreV1().Secrets(ns).Create(ctx, d.secret(p, token, boot, cert), metav1.CreateOptions{}); err != nil {
		return model.Endpoint{}, fmt.Errorf("create secret: %w", quotaRefusal(err))
	}
	if _, err := d.client.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		return model.Endpoint{}, fmt.Errorf("create network policy: %w", quotaRefusal(err))
	}
	created, err := d.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("create pod: %w", quotaRefusal(err))
	}
	d.adopt(ctx, created)
	ep, err := d.waitReady(ctx, p.name, token, cert.certPEM)
	if err != nil || token == "" {
		return ep, err
	}
	return ep, claim(ctx, ep, boot)
}

// claim gives the sidecar at ep its sandbox's token, ep.Token, over POST
// /claim authorized by boot, the token its pod mounts, which stops
// working at once (secret).
func claim(ctx context.Context, ep model.Endpoint, boot string) error {
	if _, err := sidecarCall(ctx, ep, http.MethodPost, "/claim", boot, map[string]string{"token": ep.Token}); err != nil {
		return fmt.Errorf("claim the sidecar: %w", err)
	}
	return nil
}

// adopt makes the pod the owner of its Secret and NetworkPolicy, so the
// cluster's garbage collector removes them with a pod deleted by anyone.
// They exist before the pod (it mounts the Secret), hence a patch. Delete
// removes them by name anyway, so a failure is only logged.
func (d *Driver) adopt(ctx context.Context, pod *corev1.Pod) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
	}}}})
	if err != nil {
		d.log.Error("encode owner reference", "pod", pod.Name, "err", err)
		return
	}
	ns := d.cfg.Namespace
	if _, err := d.client.CoreV1().Secrets(ns).Patch(ctx, secretName(pod.Name), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		d.log.Warn("set the secret's owner", "pod", pod.Name, "err", err)
	}
	if _, err := d.client.NetworkingV1().NetworkPolicies(ns).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		d.log.Warn("set the network policy's owner", "pod", pod.Name, "err", err)
	}
}

// waitReady polls the pod until it runs with an IP and its sidecar
// answers /health, within ReadyTimeout.
func (d *Driver) waitReady(ctx context.Context, name, token string, certPEM []byte) (model.Endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ReadyTimeout)
	defer cancel()
	delay := 50 * time.Millisecond
	var lastErr error
	for {
		pod, err := d.client.CoreV1().Pods(d.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return model.Endpoint{}, fmt.Errorf("pod %s was deleted while starting", name)
		case err != nil:
			lastErr = fmt.Errorf("get pod: %w", err)
		case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			return model.Endpoint{}, fmt.Errorf("pod %s ended while starting: %s %s", name, pod.Status.Phase, pod.Status.Message)
		case pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "":
			why, never := waitingFor(pod)
			if never {
				return model.Endpoint{}, fmt.Errorf("pod %s cannot start: %s", name, why)
			}
			lastErr = fmt.Errorf("pod %s is %s%s", name, cmp.Or(string(pod.Status.Phase), "pending"), why)
		default:
			ep := d.endpoint(pod, token, certPEM)
			if err := health(ctx, ep); err != nil {
				lastErr = err
				break
			}
			return ep, nil
		}
		select {
		case <-ctx.Done():
			return model.Endpoint{}, fmt.Errorf("wait for pod %s: %w (last: %v)", name, ctx.Err(), lastErr)
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// waitingFor says what a pod that does not run yet waits for (", " and
// the reason, or "" when nothing is reported), and whether it never will
// run: an image name the runtime refuses, or one the policy Never finds
// absent. Pulls that fail, and pods no node takes, may come right (a
// registry back, a node added), so the wait goes on for those.
func waitingFor(pod *corev1.Pod) (string, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return fmt.Sprintf(", %s: %s", c.Reason, c.Message), false
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		w := cs.State.Waiting
		if w == nil || w.Reason == "" || w.Reason == "ContainerCreating" {
			continue
		}
		why := fmt.Sprintf(", %s: %s", w.Reason, w.Message)
		return why, w.Reason == "InvalidImageName" || w.Reason == "ErrImageNeverPull"
	}
	return "", false
}

func (d *Driver) endpoint(pod *corev1.Pod, token string, certPEM []byte) model.Endpoint {
	return model.Endpoint{
		Network: "tcp",
		Address: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(d.cfg.SidecarPort))),
		Token:   token, CertPEM: certPEM,
	}
}

// health asks the sidecar at ep for /health.
func health(ctx context.Context, ep model.Endpoint) error {
	_, err := sidecarCall(ctx, ep, http.MethodGet, "/health", "", nil)
	return err
}

// sidecarCall makes one request to the sidecar at ep over the pinned TLS,
// authorized with token (none when ""), and returns the body of a 2xx.
func sidecarCall(ctx context.Context, ep model.Endpoint, method, path, token string, body any) ([]byte, error) {
	hc, err := pinnedClient(ep.CertPEM)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://"+ep.Address+path, rd)
	if err != nil {
		return nil, fmt.Errorf("sidecar %s: %w", path, err)
	}
	if token != "" {
		req.Header.Set(api.HeaderSidecarToken, token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sidecar %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("sidecar %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	return data, nil
}

// Delete removes the sandbox's pod, Secret and NetworkPolicy. A sandbox
// that is gone is not an error.
func (d *Driver) Delete(ctx context.Context, id string) error {
	d.egress.Close(id)
	d.kept.forget(id, nil)
	// A paused sandbox has no pod: its Secret names it, and the copy of
	// its workspace goes too.
	sec, names, err := d.sandboxSecret(ctx, id)
	if err != nil && !errors.Is(err, model.ErrSandboxGone) {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	if sec != nil {
		if name := sec.Labels[LabelPod]; name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
		if key := sec.Annotations[annotationPausedSnapshot]; key != "" {
			if err := d.DeleteSnapshot(ctx, key); err != nil {
				d.log.Warn("delete a paused sandbox's workspace copy", "sandbox", id, "err", err)
			}
		}
	}
	var errs []error
	for _, name := range names {
		errs = append(errs, d.deletePod(ctx, name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	return nil
}

// deletePod deletes a pod and its Secret and NetworkPolicy; absent ones
// are not an error. The pod goes first: it is what runs.
func (d *Driver) deletePod(ctx context.Context, name string) error {
	ns := d.cfg.Namespace
	gone := func(err error) error {
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}
	if err := gone(d.client.CoreV1().Pods(ns).Delete(ctx, name, now)); err != nil {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	if err := gone(d.client.CoreV1().Secrets(ns).Delete(ctx, secretName(name), metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("delete secret of %s: %w", name, err)
	}
	if err := gone(d.client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("delete network policy of %s: %w", name, err)
	}
	return nil
}

// cleanup deletes what a failed start left, on a context of its own: the
// caller's may be what failed.
func (d *Driver) cleanup(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.deletePod(ctx, name); err != nil {
		d.log.Error("clean up after a failed start", "pod", name, "err", err)
	}
}

// List reports every bound sandbox pod, from labels: its endpoint comes
// from the pod's IP and its Secret. A pod that is not running is reported
// with Alive false; its endpoint may then be empty.
func (d *Driver) List(ctx context.Context) ([]model.Observed, error) {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelState: StateBound}.String()
	pods, err := d.client.CoreV1().Pods(d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandbox pods: %w", err)
	}
	var out []model.Observed
	for _, p := range pods.Items {
		id := p.Labels[LabelSandbox]
		if id == "" {
			continue
		}
		o := model.Observed{ID: id, Alive: p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""}
		if o.Alive {
			// The token is the server's after a claim; only the address
			// and the certificate come from the cluster.
			sec, err := d.client.CoreV1().Secrets(d.cfg.Namespace).Get(ctx, secretName(p.Name), metav1.GetOptions{})
			if err == nil {
				o.Endpoint = d.endpoint(&p, "", sec.Data["tls.crt"])
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// randomSuffix returns n random hex digits for warm pod names.
func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RestConfig loads the client configuration: the kubeconfig file when one
// is named, else the pod's in-cluster service account.
func RestConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config (pass a kubeconfig outside a cluster): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// NewForConfig is New with a clientset built from rc.
func NewForConfig(rc *rest.Config, cfg Config) (*Driver, error) {
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	return New(client, cfg)
}
