package egress

import (
	"net"
	"sync"
)

// Listeners holds the listener each sandbox's egress proxy is served on,
// for a driver (server/local, server/kube): the driver opens and serves
// them, Listeners closes them when the sandbox goes or the driver is
// released. The zero value is ready to use.
type Listeners struct {
	mu sync.Mutex
	m  map[string]net.Listener // sandbox id → its egress proxy's listener
}

// Set records l as the sandbox's listener, closing the one it replaces.
func (ls *Listeners) Set(id string, l net.Listener) {
	ls.mu.Lock()
	old := ls.m[id]
	if ls.m == nil {
		ls.m = map[string]net.Listener{}
	}
	ls.m[id] = l
	ls.mu.Unlock()
	if old != nil && old != l {
		_ = old.Close()
	}
}

// Close stops serving the sandbox's egress proxy, if it has one.
func (ls *Listeners) Close(id string) {
	ls.mu.Lock()
	l := ls.m[id]
	delete(ls.m, id)
	ls.mu.Unlock()
	if l != nil {
		_ = l.Close()
	}
}

// CloseAll stops serving every sandbox's egress proxy.
func (ls *Listeners) CloseAll() {
	ls.mu.Lock()
	m := ls.m
	ls.m = nil
	ls.mu.Unlock()
	for _, l := range m {
		_ = l.Close()
	}
}
