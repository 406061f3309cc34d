// Package sockprobe is test support for the AF_VSOCK refusal: it tries
// socket() with the families the sidecar's seccomp filter must refuse and
// one it must keep. The sidecar's pod and jail tests run it in child
// processes and count its lines.
package sockprobe
