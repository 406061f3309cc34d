//go:build linux

// Package images keeps the sandbox images of the local driver: root
// filesystems imported from OCI or docker archives, or built from
// declarative specs (apt, pip and npm packages over the host's system),
// one directory each under the server's state dir.
//
//	DIR/<id>/rootfs/      the root filesystem the jail binds read-only
//	DIR/<id>/upper/       a build's changes, overlaid on the host's system dirs;
//	                      owned by the ids the build had inside its jail
//	DIR/<id>/build.log    a build's log, its egress decisions included
//	DIR/<id>/archive.tar  the uploaded archive, removed once extracted
//
// The records (status, spec, which sandboxes boot from an image) are kept
// by a Records implementation: server/sqlstore's in boxkite-server, so a
// restart keeps them; JSON files beside the images otherwise (tests).
//
// Builds run in a jail like a sandbox's (a Jailer: server/local's
// RunBuild, with a sidecar/jail Build spec), whose root is the host's
// system directories overlaid with the image's writable layers
// (buildroot.go); package install scripts run there. They reach the
// network only through server/egress's proxy, granted the package hosts
// this machine is configured to use (hosts.go).
//
// Linux only, as the local driver is: every file is constrained to linux
// (builds unshare namespaces and mount overlays), so the package is left
// out of darwin builds deliberately rather than failing them; nothing
// released for darwin imports it (TestLinuxOnlyPackages).
package images
