//go:build !linux

package main

import "github.com/boxkite/boxkite/client/api"

// cgroupUsage is nil off Linux: GET /usage answers not_supported.
func cgroupUsage() func() (api.SidecarUsage, error) { return nil }
