// Package sockprobe is test support for the AF_VSOCK and uevent socket
// refusals: it tries socket() with the families and netlink protocols the
// sidecar's seccomp filter must refuse and ones it must keep. The sidecar's pod and jail tests run it in child
// processes and count its lines.
package sockprobe
