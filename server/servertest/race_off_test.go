//go:build !race

package servertest_test

// raceSlowdown scales the time bounds of tests that measure the control
// plane's speed (4 under the race detector).
const raceSlowdown = 1
