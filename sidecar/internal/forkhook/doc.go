// Package forkhook declares the runtime's fork hooks, which syscall.forkExec
// calls around its clone, for the packages that make a clone of their own
// (the sidecar's spawn, the jail's forkJail). They are declared once, here,
// as bodyless functions linknamed to the runtime's: a call to one is a
// direct call into the runtime, with no wrapper frame between, which the
// child of a clone needs (it may not grow its stack). go.dev/issue/67401
// keeps their names and signatures for programs that reach them this way.
package forkhook
