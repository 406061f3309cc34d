package audit

import (
	"cmp"
	"context"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// NotStored is the operation of the system entry that follows an
// operation's own when the host could not store what it wrote (an exec's
// command, a file write).
const NotStored = "not_stored"

// Flush is the flush of a sandbox's disk that an operation's entry is
// committed beside: Started is one already under way (its result comes
// there), else Run runs it.
type Flush struct {
	Started <-chan error
	Run     func() error
}

// AppendStored commits the entry of an operation that wrote to sb's disk
// (entry appends it, with id) beside the flush of what it wrote, and
// returns once both are done: the answer waits for both, not for one
// after the other — they are two device flushes, the disk's and the
// database's (issue 27). So the entry is written before the flush's
// result is known; when the flush fails, a system entry naming it
// (NotStored, with op) follows, and the error is the flush's, or the
// audit log's if an entry could not be committed.
func (l *Log) AppendStored(ctx context.Context, sb *model.Sandbox, op, id string, entry func() error, flush Flush) error {
	var err, syncErr error
	if flush.Started != nil {
		err = entry()
		syncErr = <-flush.Started
	} else {
		// The flush runs on this goroutine: the entry's own work (building
		// it, the commit's writes) runs on another while this one waits in
		// the kernel.
		audited := make(chan error, 1)
		go func() { audited <- entry() }()
		syncErr = flush.Run()
		err = <-audited
	}
	if syncErr == nil {
		return err
	}
	nerr := l.Append(ctx, Record{
		Sandbox: sb, Source: api.LogSourceSystem, Operation: NotStored,
		Detail:  map[string]any{"entry": id, "operation": op, "stored": false},
		Started: l.now(),
	})
	return cmp.Or(err, nerr, syncErr)
}
