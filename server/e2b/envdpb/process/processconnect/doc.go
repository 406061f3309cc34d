// Package processconnect holds the Connect handler and client of E2B envd's
// process.Process service, generated from ../../spec/process/process.proto.
package processconnect
