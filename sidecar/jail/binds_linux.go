package jail

import "slices"

// takeBinds moves the trees of Spec.Binds out of the host dirs, which are
// placed before a tmpfs workspace is and would be covered by it.
func (b *builder) takeBinds() error {
	isBind := func(t tree) bool {
		return slices.ContainsFunc(b.spec.Binds, func(bd Bind) bool { return bd.Target == t.target })
	}
	for _, t := range b.host {
		if isBind(t) {
			b.binds = append(b.binds, t)
		}
	}
	b.host = slices.DeleteFunc(b.host, isBind)
	return nil
}

// placeBinds mounts Spec.Binds in the workspace, shallowest first. Their
// mount points are made by the jail's root, so the sandbox user cannot
// remove or rename them.
func (b *builder) placeBinds() error {
	slices.SortFunc(b.binds, func(x, y tree) int { return len(x.target) - len(y.target) })
	for _, t := range b.binds {
		if err := b.place(t); err != nil {
			return err
		}
	}
	return nil
}
