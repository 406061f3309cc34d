// Package filesystem holds the message types of E2B envd's
// filesystem.Filesystem service, generated from
// ../spec/filesystem/filesystem.proto (see ../doc.go).
package filesystem
