// Package e2e holds end-to-end tests that drive real jailed sandboxes through the real control plane.
package e2e
