//go:build linux

package local

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// listenEgress makes the sandbox's egress socket in its run dir (which
// the jail has read-only), owned by the jail's root and 0600, set through
// the socket's descriptor, and hands the listener to serve; Delete closes
// it.
func (d *Driver) listenEgress(id string, js jail.Spec, serve func(net.Listener)) error {
	l, sock, err := listenIn(js.RunDir, jail.EgressSocketName)
	if err != nil {
		return fmt.Errorf("listen egress: %w", err)
	}
	err = setSocketOwner(sock, d.root, js.HostIDBase, js.HostIDBase, 0o600)
	_ = sock.Close()
	if err != nil {
		_ = l.Close()
		return fmt.Errorf("listen egress: %w", err)
	}
	d.egress.Set(id, l)
	serve(l)
	return nil
}

// ReopenEgress implements model.EgressReopener: it serves the egress
// socket of a sandbox a previous process created, whose listener died
// with that process. The sidecar connects per request, so a new listener
// on the same path is all it needs.
func (d *Driver) ReopenEgress(_ context.Context, id string, serve func(net.Listener)) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("reopen egress: invalid id %q", id)
	}
	js := jail.Spec{ID: id, RunDir: filepath.Join(d.sandboxDir(id), "run")}
	if d.root {
		st, err := readState(d.sandboxDir(id))
		if err != nil {
			return fmt.Errorf("reopen egress: %w", err)
		}
		js.HostIDBase = cmp.Or(st.HostIDBase, d.cfg.LegacyIDBase)
	}
	d.egress.Close(id)
	if err := removeSocket(js.RunDir, jail.EgressSocketName); err != nil {
		return fmt.Errorf("reopen egress: %w", err)
	}
	return d.listenEgress(id, js, serve)
}

// Release stops serving every egress socket this Driver holds, leaving
// the sandboxes running, as the driver's process exiting would: a new
// Driver on the same StateDir takes them over and a server adopting them
// reopens their egress (ReopenEgress). The pools stop filling too, so no
// member started after the new Driver cleared the pool outlives both.
func (d *Driver) Release() {
	if d.pool != nil {
		d.pool.halt()
	}
	if d.prepared != nil {
		d.prepared.halt()
	}
	d.egress.CloseAll()
	d.releaseHandles()
	// A process's death would end its removals under way; in one process
	// (tests) they finish first, so the next Driver does not meet them
	// half done (a removal left unstarted is finished by that Driver).
	_ = d.removals.wait(context.Background())
}
