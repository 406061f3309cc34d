// Package filesystemconnect holds the Connect handler and client of E2B
// envd's filesystem.Filesystem service, generated from
// ../../spec/filesystem/filesystem.proto.
package filesystemconnect
