// Package envdpb holds the E2B envd service definitions (spec/, Apache-2.0,
// see spec/NOTICE) and the Go code generated from them: the message types
// in process and filesystem, the Connect handlers and clients in
// process/processconnect and filesystem/filesystemconnect. The generated
// code is committed; CI regenerates it and fails when it differs.
package envdpb

//go:generate go run ../../../internal/protogen -I spec -module github.com/boxkite/boxkite -out ../../.. -plugin protoc-gen-go -plugin protoc-gen-connect-go process/process.proto filesystem/filesystem.proto
