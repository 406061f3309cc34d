package kube

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/server/internal/pintls"
	"github.com/boxkite/boxkite/server/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// keptIdle is how long a kept sidecar connection may sit idle: below the
// sidecar's own idle timeout (apihttp.IdleTimeout, 2 minutes), so the
// driver, not the sidecar, closes it and a request never meets a
// connection the sidecar is closing.
const keptIdle = 90 * time.Second

// keptSidecars keeps, per sandbox, how its pod's sidecar is reached (the
// pod's address, the sandbox's token and the pinned certificate: a pod
// List and a Secret Get to look up) and a client that keeps its TLS
// connection open. Stats, which E2B's getMetrics polls every few
// seconds, then costs one request to the sidecar and none to the API
// server. An entry goes when its pod changes: the driver's own Pause,
// Resume and Delete, WatchLost's events (another replica's, or anyone's
// deletion), and any request through it that fails, after which the
// next call looks the pod up again.
type keptSidecars struct {
	mu    sync.Mutex
	m     map[string]*keptSidecar // by sandbox id
	dials atomic.Uint64           // TCP connections the kept clients opened
}

// keptSidecar is one sandbox's pod's sidecar.
type keptSidecar struct {
	pod     types.UID
	podName string
	ep      model.Endpoint
	hc      *http.Client
}

// get returns sandbox id's kept sidecar, looking it up with find (and
// keeping it) when there is none; cached says it was kept before.
func (k *keptSidecars) get(ctx context.Context, id string, find func(context.Context, string) (*corev1.Pod, model.Endpoint, error)) (s *keptSidecar, cached bool, err error) {
	k.mu.Lock()
	s = k.m[id]
	k.mu.Unlock()
	if s != nil {
		return s, true, nil
	}
	pod, ep, err := find(ctx, id)
	if err != nil {
		return nil, false, err
	}
	hc, err := k.client(ep.CertPEM)
	if err != nil {
		return nil, false, err
	}
	s = &keptSidecar{pod: pod.UID, podName: pod.Name, ep: ep, hc: hc}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*keptSidecar{}
	}
	if old := k.m[id]; old != nil && old.pod == s.pod && old.ep.Address == s.ep.Address {
		// A concurrent call kept the same pod first: share its client.
		return old, false, nil
	} else if old != nil {
		old.hc.CloseIdleConnections()
	}
	k.m[id] = s
	return s, false, nil
}

// client is an HTTP client that talks TLS to the sidecar whose
// certificate is certPEM and keeps its connection for the next request.
func (k *keptSidecars) client(certPEM []byte) (*http.Client, error) {
	cfg, err := pintls.Config(certPEM)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: cfg, Proxy: nil,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				k.dials.Add(1)
				return dialer.DialContext(ctx, network, addr)
			},
			MaxIdleConnsPerHost: 2, // two getMetrics polls at once
			IdleConnTimeout:     keptIdle,
		},
	}, nil
}

// forget drops sandbox id's kept sidecar, only if it is s when s is not
// nil (a failed request's, which a newer lookup may have replaced).
func (k *keptSidecars) forget(id string, s *keptSidecar) {
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.m[id]
	if old == nil || s != nil && old != s {
		return
	}
	delete(k.m, id)
	old.hc.CloseIdleConnections()
}

// observe drops the kept sidecar of pod p's sandbox unless p is its pod,
// still running at the same address (addr, the sidecar's on p's IP): a
// watch event of a sandbox pod (deleted is a Deleted event's). A new pod
// of the sandbox (a resume elsewhere), one being deleted, stopped or
// moved all drop it.
func (k *keptSidecars) observe(p *corev1.Pod, deleted bool, addr string) {
	id := p.Labels[LabelSandbox]
	if id == "" {
		return
	}
	k.mu.Lock()
	s := k.m[id]
	k.mu.Unlock()
	if s == nil {
		return
	}
	if !deleted && p.UID == s.pod && p.DeletionTimestamp == nil && !stopped(p) && p.Status.PodIP != "" &&
		addr == s.ep.Address {
		return
	}
	if deleted && p.UID != s.pod {
		return // an older pod of the sandbox going
	}
	k.forget(id, s)
}

// closeAll drops every kept sidecar and closes their connections.
func (k *keptSidecars) closeAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for id, s := range k.m {
		s.hc.CloseIdleConnections()
		delete(k.m, id)
	}
}
