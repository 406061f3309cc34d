//go:build linux

package local

import "github.com/boxkite/boxkite/server/local/idrange"

// Defaults of the host id range layout (Config.IDRange*), leased through
// server/local/idrange.
const (
	DefaultIDRangeDir   = idrange.DefaultDir
	DefaultIDRangeFirst = idrange.DefaultFirst
	DefaultIDRangeCount = idrange.DefaultCount
	// LegacyIDBase is the one range every root jail shared before
	// per-sandbox ranges; volume data owned by it is moved to canonical ids
	// when first mounted (see migrateLegacyIDs).
	LegacyIDBase = 200000
)

// ErrNoIDRange means every range of the layout is leased: the host is at
// capacity (idrange.ErrNoIDRange).
var ErrNoIDRange = idrange.ErrNoIDRange
