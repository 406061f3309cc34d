// Package cli is the boxkite command line: the cobra tree, configuration,
// output formatting and the local-mode bootstrap (boxkite up/down).
package cli
