package sidecar

// fileRoutes registers the file, search, watch and transfer routes.
func (h *Handler) fileRoutes() {}
