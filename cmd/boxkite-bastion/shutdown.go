package main

import (
	"fmt"
	"sync"

	"github.com/gliderlabs/ssh"
)

// shutdownMessage is what an open session reads when the bastion stops
// (a restart, or `boxkite down`): its host key is kept, so reconnecting
// works without a known_hosts warning.
const shutdownMessage = "\r\nboxkite-bastion: the bastion is shutting down; this session ends here. Reconnect once it is back.\r\n"

// sessionSet holds the open sessions, so a shutdown can tell each one
// why it ends instead of cutting the connection silently.
type sessionSet struct {
	mu      sync.Mutex
	closing bool
	open    map[ssh.Session]struct{}
}

func newSessionSet() *sessionSet { return &sessionSet{open: map[ssh.Session]struct{}{}} }

// add registers a new session until its connection ends; it refuses one
// while the bastion is shutting down.
func (set *sessionSet) add(s ssh.Session) bool {
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.closing {
		return false
	}
	set.open[s] = struct{}{}
	go func() {
		<-s.Context().Done()
		set.mu.Lock()
		delete(set.open, s)
		set.mu.Unlock()
	}()
	return true
}

// endAll tells every open session that the bastion is going away and ends
// it with exit status 255, as ssh itself reports a lost connection.
func (set *sessionSet) endAll() {
	set.mu.Lock()
	set.closing = true
	open := make([]ssh.Session, 0, len(set.open))
	for s := range set.open {
		open = append(open, s)
	}
	set.mu.Unlock()
	for _, s := range open {
		fmt.Fprint(s.Stderr(), shutdownMessage)
		_ = s.Exit(255)
		_ = s.Close()
	}
}
