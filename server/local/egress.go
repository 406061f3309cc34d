package local

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/boxkite/boxkite/sidecar/jail"
	"golang.org/x/sys/unix"
)

// listenEgress makes the sandbox's egress socket in its run dir, owned by
// the jail's root, and hands the listener to serve; Delete closes it.
func (d *Driver) listenEgress(id string, js jail.Spec, serve func(net.Listener)) error {
	path := filepath.Join(js.RunDir, jail.EgressSocketName)
	// A deep state dir makes the path longer than a socket address: bind
	// through the directory's descriptor instead.
	dir, err := os.OpenFile(js.RunDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("listen egress: %w", err)
	}
	defer dir.Close()
	l, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), jail.EgressSocketName))
	if err != nil {
		return fmt.Errorf("listen egress: %w", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false) // the name is gone with the run dir
	if d.root {
		err = os.Chown(path, js.HostIDBase, js.HostIDBase)
	}
	if err == nil {
		err = os.Chmod(path, 0o600)
	}
	if err != nil {
		_ = l.Close()
		return fmt.Errorf("listen egress: %w", err)
	}
	d.mu.Lock()
	if d.egress == nil {
		d.egress = map[string]net.Listener{}
	}
	d.egress[id] = l
	d.mu.Unlock()
	serve(l)
	return nil
}

// closeEgress stops serving the sandbox's egress socket, if it has one.
func (d *Driver) closeEgress(id string) {
	d.mu.Lock()
	l := d.egress[id]
	delete(d.egress, id)
	d.mu.Unlock()
	if l != nil {
		_ = l.Close()
	}
}
