// Package hold keeps back the end of an answer until the operation's
// audit entry is committed. An exec's audit entry is committed before the
// client has the whole answer, so an exec whose result a client saw is
// never missing from the log, even if the server is killed right after
// it (issue 5, acceptance 3). The part held back is the end: the whole
// JSON result (Response), or the exit event of a stream (Exit), whose
// output still flows as it is produced; Tail does the same for a
// proxied stream.
package hold
