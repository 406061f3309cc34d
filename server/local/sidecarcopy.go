//go:build linux

package local

import "github.com/boxkite/boxkite/server/local/hugecopy"

// Sidecar copies (Config.SidecarCopies), which server/local/hugecopy
// makes and holds.
const (
	// DefaultSidecarCopies is the host-wide directory a root driver mounts
	// its huge-page tmpfs on. Not under /run/boxkite, which is private
	// (0700): a jail's init is executed by the range's owner, an
	// unprivileged uid, which must be able to reach the file.
	DefaultSidecarCopies = "/run/boxkite-sidecar"
	// SidecarCopiesOff runs the sidecar binary where it is.
	SidecarCopiesOff = "off"
)

// sidecarCopy is the copy a driver runs its jails from, held.
type sidecarCopy = hugecopy.Copy

// copySidecar returns the copy of the sidecar binary src in dir
// (hugecopy.Make); an error means the driver runs src itself.
func copySidecar(dir, src string) (*sidecarCopy, error) { return hugecopy.Make(dir, src) }
