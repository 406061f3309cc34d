//go:build unix && !linux

package sidecar

import "context"

// watchCommand reads r's output and waits for it (watchGoroutines; Linux
// has a leaner way, execwait_linux.go).
func (h *Handler) watchCommand(ctx context.Context, r running) waited {
	return h.watchGoroutines(ctx, r)
}

// pollerPool is Linux's (execwait_linux.go).
type pollerPool struct{}
