// Package process holds the message types of E2B envd's process.Process
// service, generated from ../spec/process/process.proto (see ../doc.go).
package process
