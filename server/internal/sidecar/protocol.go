package sidecar

import (
	"net/http"
	"sync/atomic"

	"github.com/boxkite/boxkite/client/api"
)

// The sidecar protocol versions (api.SidecarProtocol) that brought what
// the control plane sends a sidecar or expects of it, where an older
// sidecar would do something else. docs/architecture.md ("Sidecar protocol
// versions") has the table and what the control plane does with an older
// sidecar.
const (
	// ProtoDetachUntilIdle: /pty answers a {"type":"detach",
	// "until_idle":true} frame by closing once its shell ran the input
	// (bastion21). An older sidecar ignores the frame, and the session
	// would wait for a close that never comes: the control plane ends it
	// as a plain detach instead.
	ProtoDetachUntilIdle = 1
	// ProtoArchiveOneFileSystem: GET /files/archive takes
	// one_file_system=true and leaves out the volumes mounted below the
	// path. An older sidecar copies them too: the kube driver leaves their
	// entries out of the copy itself.
	ProtoArchiveOneFileSystem = 1
	// ProtoUsage: GET /usage answers the memory and CPU time of the
	// cgroup the sidecar runs in (a pod's container). An older sidecar
	// answers its "no route" 404: the kube driver's Stats answers 501
	// not_supported that says the sidecar is older.
	ProtoUsage = 2
)

// protocolTransport records the protocol version each answer of a
// sandbox's sidecar states, so the control plane knows it from the health
// check of a start or an adoption on, at no cost of a round trip.
type protocolTransport struct {
	rt   http.RoundTripper
	seen *atomic.Int32 // -1 until an answer came
}

func (t protocolTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil {
		t.seen.Store(int32(min(api.SidecarProtocolOf(resp.Header), 1<<30)))
	}
	return resp, err
}

// Protocol is the protocol version the last answer of sandbox id's sidecar
// stated (0: an older sidecar, which states none), and whether one came
// through this server's client yet.
func (c *Clients) Protocol(id string) (int, bool) {
	c.mu.Lock()
	sc, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		return 0, false
	}
	v := sc.protocol.Load()
	return int(max(v, 0)), v >= 0
}
