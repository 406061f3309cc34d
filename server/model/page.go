package model

import "time"

// SandboxPage asks SandboxStore.ListSandboxPage for one page of an
// account's sandboxes.
type SandboxPage struct {
	// ActiveOnly keeps only the live sandboxes (active or paused).
	ActiveOnly bool
	// Limit is the most rows the page holds; 0 is no limit.
	Limit int
	// AfterCreated and AfterID, when AfterID is set, name the last row of
	// the page before: this page starts after it in the list's order
	// (created_at descending, then id descending).
	AfterCreated time.Time
	AfterID      string
}
