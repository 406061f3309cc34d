// Package quietterm keeps boxkite from querying the terminal at start-up.
//
// bubbletea v1 asks lipgloss, in its package initialiser (tea_init.go),
// whether the terminal has a dark background, so that a later TUI does not
// race the answer. termenv answers by writing ESC]11;? and ESC[6n to the
// terminal and waiting up to 5 s for a reply; a terminal that does not
// answer (tmux without passthrough, script(1), many CI and editor
// terminals) shows the escapes and stalls every command, `boxkite version`
// included. bubbletea v2 drops that initialiser; until the TUI moves to it,
// this package settles the answer first.
//
// Go initialises packages one at a time, each time the first in import-path
// order whose imports are all initialised (the spec's "Package
// initialization"). This package imports only lipgloss and sorts before
// github.com/charmbracelet/bubbletea, so, linked into a program through
// the cli package, its variable below is initialised before bubbletea's
// init runs, and that init finds the background already decided.
//
// Deciding "dark" is what termenv itself falls back to when a terminal does
// not answer. The TUI's own styles use fixed colours, so nothing boxkite
// draws depends on the answer; only bubbles' adaptive defaults would.
package quietterm

import "github.com/charmbracelet/lipgloss"

// Settled is true once the default lipgloss renderer has a background
// colour set, so it never asks the terminal for one. Reading it is how a
// package makes sure this one is linked.
var Settled = settle()

func settle() bool {
	lipgloss.SetHasDarkBackground(true)
	return true
}
