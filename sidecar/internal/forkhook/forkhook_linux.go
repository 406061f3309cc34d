package forkhook

import _ "unsafe" // for go:linkname

// BeforeFork blocks signals on the calling thread and poisons its stack
// guard, so that any stack growth in a clone's child throws. Call it just
// before the clone, and AfterFork in the parent after it.
//
//go:linkname BeforeFork syscall.runtime_BeforeFork
func BeforeFork()

// AfterFork undoes BeforeFork in the parent.
//
//go:linkname AfterFork syscall.runtime_AfterFork
func AfterFork()

// AfterForkInChild resets the child's signal handlers to the defaults (a Go
// handler must not run in the child) and restores the signal mask from
// before BeforeFork.
//
//go:linkname AfterForkInChild syscall.runtime_AfterForkInChild
func AfterForkInChild()
