//go:build race

package servertest_test

// raceSlowdown scales the time bounds of tests that measure the control
// plane's speed: the race detector slows it 5–10×, so under it such a
// bound only shows that nothing stalls; the bound itself is checked by a
// run without -race (docs/storage.md).
const raceSlowdown = 4
