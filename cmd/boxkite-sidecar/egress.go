package main

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/boxkite/boxkite/sidecar"
)

// startEgress sets commands up to reach the egress proxy when the driver
// granted the sandbox egress, and returns the base environment of
// commands: nil (the default) without egress, else the default plus the
// proxy variables. With socket set (a local jail: the driver's egress
// socket in the read-only run dir, named by init), it forwards
// sidecar.EgressProxyAddr to that socket. With proxy set (a pod, whose
// network the driver's NetworkPolicy limits to the proxy), commands reach
// the proxy at that address directly. Nothing else makes it look for a
// socket: a pod on a shared host must not take a path of the host's, or
// the proxy port, for a grant.
func startEgress(log *slog.Logger, workspace, proxy, socket string) ([]string, error) {
	switch {
	case proxy != "" && socket != "":
		return nil, fmt.Errorf("egress: --egress-proxy and --egress-socket exclude each other")
	case proxy != "":
		if _, _, err := net.SplitHostPort(proxy); err != nil {
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
		log.Info("egress granted", "proxy", proxy)
		return append(sidecar.SafeEnv(workspace), sidecar.EgressEnvFor(proxy)...), nil
	case socket == "":
		return nil, nil
	}
	l, err := net.Listen("tcp", sidecar.EgressProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for egress: %w", err)
	}
	go sidecar.ForwardEgress(l, socket, log)
	log.Info("egress granted", "proxy", sidecar.EgressProxyAddr)
	return append(sidecar.SafeEnv(workspace), sidecar.EgressEnv()...), nil
}
