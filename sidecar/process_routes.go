package sidecar

// processRoutes registers background processes, the interpreter, the PTY,
// LSP, the exec budget and metrics.
func (h *Handler) processRoutes() {}
