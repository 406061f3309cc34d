package kube

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/boxkite/boxkite/client/api"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationEgress records on a pod granted egress the "host:port" its
// commands reach the control plane's egress proxy on, so a restarted
// server can listen there again (ReopenEgress).
const AnnotationEgress = "boxkite.dev/egress-proxy"

// listenEgress opens a TCP port on EgressHost for one sandbox's egress
// proxy. The pod's NetworkPolicy lets it reach the control plane on this
// port only.
func (d *Driver) listenEgress(addr string) (net.Listener, error) {
	if d.cfg.EgressHost == "" {
		// The API's answer: no retry helps until the operator sets it.
		return nil, api.Errorf(http.StatusUnprocessableEntity, api.CodeNotSupported,
			"this server cannot grant sandboxes egress: the kube driver has no egress host (boxkite-server --egress-host)").
			WithHint("create the sandbox without egress_hosts and MCP connections, or ask the operator to set --egress-host (the Helm chart sets it to the server pod's IP)")
	}
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for egress: %w", err)
	}
	return l, nil
}

// serveEgress hands l to serve and keeps it until the sandbox is deleted
// or the driver released.
func (d *Driver) serveEgress(id string, l net.Listener, serve func(net.Listener)) {
	d.egress.Set(id, l)
	serve(l)
}

// ReopenEgress implements model.EgressReopener: it serves the egress
// proxy of a sandbox a previous process created on the address recorded
// in its pod's annotation. The sidecar passes that address to commands
// when the pod starts, so it only works while this server has the same
// EgressHost (a server pod that came back with a new IP cannot serve it:
// the sandbox then has no egress until it is recreated).
func (d *Driver) ReopenEgress(ctx context.Context, id string, serve func(net.Listener)) error {
	pod, err := d.client.CoreV1().Pods(d.cfg.Namespace).Get(ctx, podName(id), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reopen egress of %s: get pod: %w", id, err)
	}
	addr := pod.Annotations[AnnotationEgress]
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("reopen egress of %s: pod has no egress address: %w", id, err)
	}
	if host != d.cfg.EgressHost {
		return fmt.Errorf("reopen egress of %s: the pod reaches the proxy on %s, this server listens on %s", id, host, d.cfg.EgressHost)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("reopen egress of %s: bad port %q", id, port)
	}
	d.egress.Close(id)
	l, err := d.listenEgress(addr)
	if err != nil {
		return fmt.Errorf("reopen egress of %s: %w", id, err)
	}
	d.serveEgress(id, l, serve)
	return nil
}

// Release stops serving every egress proxy this Driver holds, leaving the
// pods running, as the process exiting would: a server adopting them
// reopens their egress (ReopenEgress). It closes the connections Stats
// kept to sidecars too.
func (d *Driver) Release() {
	d.egress.CloseAll()
	d.kept.closeAll()
}
