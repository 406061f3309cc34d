package model

import (
	"encoding/json"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// ExecLogEntry is one audit record: an operation on a sandbox that
// succeeded. Entries of a sandbox form a hash chain in Seq order (see
// api.LogEntry.Hash); the store assigns Seq, PrevHash and RowHash when it
// appends one (Seal).
type ExecLogEntry struct {
	ID              string
	SandboxID       string
	AccountID       string
	Seq             int64 // 1, 2, … per sandbox: the chain order
	Source          string
	Operation       string
	Detail          json.RawMessage // canonical JSON object (api.CanonicalJSON)
	ExitCode        *int
	OutputTruncated bool
	StartedAt       time.Time // microsecond precision, as stored
	DurationMS      int64
	PrevHash        string
	RowHash         string
}

// ToAPI converts the record to its wire form.
func (e *ExecLogEntry) ToAPI() api.LogEntry {
	return api.LogEntry{
		ID:              e.ID,
		SessionID:       e.SandboxID,
		AccountID:       e.AccountID,
		Source:          e.Source,
		Operation:       e.Operation,
		Detail:          e.Detail,
		ExitCode:        e.ExitCode,
		OutputTruncated: e.OutputTruncated,
		StartedAt:       e.StartedAt.UTC(),
		DurationMS:      e.DurationMS,
		RowHash:         e.RowHash,
		PrevHash:        e.PrevHash,
		Seq:             e.Seq,
	}
}

// Seal links e after prev (the sandbox's last RowHash, or api.GenesisHash)
// and computes its RowHash. Stores call it inside the transaction that
// appends e.
func (e *ExecLogEntry) Seal(prev string) error {
	e.PrevHash = prev
	h, err := e.ToAPI().Hash(prev)
	if err != nil {
		return err
	}
	e.RowHash = h
	return nil
}

// ExecLogHead is where a sandbox's chain ended at its last append, as the
// store recorded it in the same transaction.
type ExecLogHead struct {
	Seq     int64  // of the last entry; 0 before any
	RowHash string // of the last entry; api.GenesisHash before any
}

// VerifyExecLog checks a sandbox's whole chain against the head the store
// recorded: entries must be all of its entries in Seq order, starting at
// the first and reaching head. The error names the first entry that does
// not verify and wraps api.ErrChainBroken (and api.ErrLogGap for a
// missing entry).
//
// An edited, inserted, reordered or removed row breaks the chain; so does
// removing the newest rows, which leaves a chain shorter than its head.
func VerifyExecLog(entries []*ExecLogEntry, head ExecLogHead) error {
	out := make([]api.LogEntry, len(entries))
	for i, e := range entries {
		out[i] = e.ToAPI()
	}
	return api.VerifyLog(out, head.Seq, head.RowHash)
}
