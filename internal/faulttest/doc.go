// Package faulttest breaks the host under a real control plane and checks
// that nothing acknowledged is lost and every failure is reported
// honestly (issue 19): sidecars killed with SIGKILL, the server killed
// mid-burst, the host's store filled up, the database made read-only,
// host limits reached, and `boxkite down` cleaning up after all of it.
//
// The tests need root (loop devices, mounts, cgroups): CI runs them as
// root, and outside CI they skip without it. They bind 127.0.0.1 only.
package faulttest
