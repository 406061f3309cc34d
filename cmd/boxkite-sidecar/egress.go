package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"

	"github.com/boxkite/boxkite/sidecar"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// startEgress forwards sidecar.EgressProxyAddr to the egress proxy's
// socket when the driver granted the sandbox egress (the socket exists in
// the run dir), and returns the base environment of commands: nil (the
// default) without egress, else the default plus the proxy variables.
// With proxy set (a pod, whose network the driver's NetworkPolicy limits
// to the proxy), commands reach the proxy at that address directly. A pod
// (jailed false) never looks for the run dir's socket: that path belongs to
// the local driver's jail, and on a shared host it may name someone else's.
func startEgress(log *slog.Logger, workspace, proxy string, jailed bool) ([]string, error) {
	if proxy != "" {
		if _, _, err := net.SplitHostPort(proxy); err != nil {
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
		log.Info("egress granted", "proxy", proxy)
		return append(sidecar.SafeEnv(workspace), sidecar.EgressEnvFor(proxy)...), nil
	}
	if !jailed {
		return nil, nil
	}
	socket := jail.RunDir + "/" + jail.EgressSocketName
	if _, err := os.Stat(socket); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("look for the egress socket: %w", err)
	}
	l, err := net.Listen("tcp", sidecar.EgressProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for egress: %w", err)
	}
	go sidecar.ForwardEgress(l, socket, log)
	log.Info("egress granted", "proxy", sidecar.EgressProxyAddr)
	return append(sidecar.SafeEnv(workspace), sidecar.EgressEnv()...), nil
}
