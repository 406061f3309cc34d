package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Sources of audit log entries, in LogEntry.Source.
const (
	LogSourceAgent         = "agent"          // an API call: exec, files, processes, …
	LogSourceHumanTakeover = "human_takeover" // a person on the sandbox's terminal
	LogSourceImageBuild    = "image_build"    // an image build: its egress and outcome (SessionID is the image id)
	// LogSourceSystem marks what the server itself records about a
	// sandbox: that it was lost, frozen or thawed.
	LogSourceSystem = "system"
)

// Page sizes of GET /v1/sandboxes/{id}/log.
const (
	DefaultLogLimit = 50
	MaxLogLimit     = 500
)

// GenesisHash is the PrevHash of the first entry of every sandbox's chain.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// CodeTakeoverNotPermitted (HTTP 403) answers a takeover by a member key:
// only admin keys may type into a sandbox's terminal.
const CodeTakeoverNotPermitted = "takeover_not_permitted"

// LogEntry is one audit record of a sandbox (ExecLogEntryOut in the
// reference): an operation that succeeded, with a Detail whose shape
// depends on Operation. File contents, process input and exec stdin are
// never part of it.
//
// Entries of one sandbox form a hash chain: RowHash covers the entry and
// PrevHash, the RowHash of the entry before it (GenesisHash for the first),
// so an edited, removed or reordered row breaks every hash after it. See
// VerifyLogChain.
type LogEntry struct {
	ID              string          `json:"id"`
	SessionID       string          `json:"session_id"` // the sandbox id (an image build's: the image id)
	AccountID       string          `json:"account_id"` // not in the reference's output; needed to verify the hash
	Source          string          `json:"source"`     // a LogSource* value
	Operation       string          `json:"operation"`  // e.g. "exec", "file_create", "takeover_end"
	Detail          json.RawMessage `json:"detail"`     // a JSON object
	ExitCode        *int            `json:"exit_code"`
	OutputTruncated bool            `json:"output_truncated"`
	StartedAt       time.Time       `json:"started_at"`
	DurationMS      int64           `json:"duration_ms"`
	RowHash         string          `json:"row_hash"`
	PrevHash        string          `json:"prev_hash"`
	// Seq numbers a sandbox's entries 1, 2, … in chain order, so a
	// missing entry shows as a gap. Not part of the hash (the reference's
	// chain has no such field); 0 from servers that do not send it.
	Seq int64 `json:"seq,omitempty"`
}

// LogPage is the answer to GET /v1/sandboxes/{id}/log: entries oldest
// first (in chain order), and Total entries in all.
type LogPage struct {
	Entries []LogEntry `json:"entries"`
	Limit   int        `json:"limit"`
	Offset  int        `json:"offset"`
	Total   int        `json:"total"`
	// HeadSeq and HeadHash are where the chain ended at its last append,
	// as the server recorded it with that append (0 and GenesisHash
	// before any; empty from servers that do not keep it). A whole log
	// must end there: see VerifyLog.
	HeadSeq  int64  `json:"head_seq"`
	HeadHash string `json:"head_hash,omitempty"`
}

// Hash returns the entry's row hash given the previous entry's:
// hex SHA-256 of prev + "|" + the canonical JSON (CanonicalJSON) of
// {id, session_id, account_id, source, operation, detail, exit_code,
// output_truncated, started_at, duration_ms}, started_at written as a naive
// UTC ISO 8601 time with microseconds (Python's datetime.isoformat()).
// This is the reference's chain, so its verify script agrees with ours.
func (e LogEntry) Hash(prev string) (string, error) {
	detail := e.Detail
	if len(bytes.TrimSpace(detail)) == 0 {
		detail = json.RawMessage("{}")
	}
	var d any
	dec := json.NewDecoder(bytes.NewReader(detail))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return "", fmt.Errorf("decode detail of log entry %s: %w", e.ID, err)
	}
	// The entry's own keys are fixed: written in their sorted order
	// (canonical JSON's), with no map to build and sort for each entry.
	var b bytes.Buffer
	b.Grow(len(prev) + len(detail) + 320)
	b.WriteString(prev)
	b.WriteString(`|{"account_id":`)
	writeASCIIString(&b, e.AccountID)
	b.WriteString(`,"detail":`)
	if err := writeCanonical(&b, d); err != nil {
		return "", fmt.Errorf("canonical form of log entry %s: %w", e.ID, err)
	}
	b.WriteString(`,"duration_ms":`)
	b.WriteString(strconv.FormatInt(e.DurationMS, 10))
	b.WriteString(`,"exit_code":`)
	if e.ExitCode != nil {
		b.WriteString(strconv.Itoa(*e.ExitCode))
	} else {
		b.WriteString("null")
	}
	b.WriteString(`,"id":`)
	writeASCIIString(&b, e.ID)
	b.WriteString(`,"operation":`)
	writeASCIIString(&b, e.Operation)
	b.WriteString(`,"output_truncated":`)
	b.WriteString(strconv.FormatBool(e.OutputTruncated))
	b.WriteString(`,"session_id":`)
	writeASCIIString(&b, e.SessionID)
	b.WriteString(`,"source":`)
	writeASCIIString(&b, e.Source)
	b.WriteString(`,"started_at":"`)
	var at [48]byte
	b.Write(appendISONaiveUTC(at[:0], e.StartedAt)) // digits and -T:. only: nothing to escape
	b.WriteString(`"}`)
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// appendISONaiveUTC appends t as Python's naive datetime.isoformat()
// writes it: no zone, microseconds only when non-zero.
func appendISONaiveUTC(dst []byte, t time.Time) []byte {
	t = t.UTC()
	dst = t.AppendFormat(dst, "2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		dst = append(dst, '.')
		for d := 100000; d > 0; d /= 10 {
			dst = append(dst, byte('0'+us/d%10))
		}
	}
	return dst
}

// ErrChainBroken is wrapped by the errors of VerifyLogChain and VerifyLog.
var ErrChainBroken = errors.New("audit log hash chain is broken")

// ErrLogGap is wrapped, with ErrChainBroken, by VerifyLog's errors about a
// missing entry: a sequence number skipped, or a log that ends before the
// head the server recorded.
var ErrLogGap = errors.New("audit log has a gap")

// entryCount is "1 entry" or "N entries".
func entryCount(n int64) string {
	if n == 1 {
		return "1 entry"
	}
	return strconv.FormatInt(n, 10) + " entries"
}

// VerifyLog checks a sandbox's whole log, entries oldest first: their
// sequence numbers run 1, 2, … without a gap (when the server sends
// them), the hash chain links up from GenesisHash (VerifyLogChain), and
// the log reaches the head the server recorded with its last append
// before the first page was read (LogPage.HeadSeq and HeadHash of that
// page; entries appended since may follow it; an empty headHash skips
// that check). So an edit, a removal in the middle and a removal of the
// newest entries are all caught. Errors number entries from 1, as Seq
// does: entry N is the sandbox's Nth.
func VerifyLog(entries []LogEntry, headSeq int64, headHash string) error {
	for i, e := range entries {
		if e.Seq != 0 && e.Seq != int64(i+1) {
			return fmt.Errorf("%w: %w at entry %d (%s): sequence number %d, want %d (%s missing before it)",
				ErrChainBroken, ErrLogGap, i+1, e.ID, e.Seq, i+1, entryCount(e.Seq-int64(i+1)))
		}
	}
	if err := VerifyLogChain(GenesisHash, entries); err != nil {
		return err
	}
	if headHash == "" || headSeq == 0 {
		return nil
	}
	if n := int64(len(entries)); n < headSeq {
		return fmt.Errorf("%w: %w: the log ends at entry %d but the server recorded %d (%s missing at the end)",
			ErrChainBroken, ErrLogGap, n, headSeq, entryCount(headSeq-n))
	}
	if got := entries[headSeq-1].RowHash; got != headHash {
		return fmt.Errorf("%w at entry %d (%s): row_hash %.12s… is not the head the server recorded (%.12s…)",
			ErrChainBroken, headSeq, entries[headSeq-1].ID, got, headHash)
	}
	return nil
}

// VerifyLogChain checks that entries, consecutive entries of one sandbox's
// chain in order, link up starting from prev (GenesisHash when entries
// starts at the first) and that each RowHash is right. The error names
// the first entry that fails, numbered from 1 as VerifyLog's are (its
// Seq, else its place in entries), and wraps ErrChainBroken.
func VerifyLogChain(prev string, entries []LogEntry) error {
	for i, e := range entries {
		n := e.Seq
		if n == 0 {
			n = int64(i + 1)
		}
		if e.PrevHash != prev {
			return fmt.Errorf("%w at entry %d (%s): prev_hash %.12s… does not match the previous row_hash %.12s…",
				ErrChainBroken, n, e.ID, e.PrevHash, prev)
		}
		h, err := e.Hash(prev)
		if err != nil {
			return fmt.Errorf("%w at entry %d (%s): %w", ErrChainBroken, n, e.ID, err)
		}
		if h != e.RowHash {
			return fmt.Errorf("%w at entry %d (%s): row_hash %.12s… does not match its contents (%.12s…)",
				ErrChainBroken, n, e.ID, e.RowHash, h)
		}
		prev = e.RowHash
	}
	return nil
}

// CanonicalJSON re-encodes the JSON value in data the way Python's
// json.dumps(v, sort_keys=True, separators=(",", ":")) does: object keys
// sorted, no spaces, non-ASCII and control characters as \uXXXX escapes,
// numbers as written.
func CanonicalJSON(data []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if dec.More() {
		return nil, errors.New("canonical json: more than one value")
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(v.String())
	case string:
		writeASCIIString(b, v)
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, x); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		// Byte order of UTF-8 is code point order, which is Python's.
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeASCIIString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("canonical json: unexpected %T", v)
	}
	return nil
}

// writeASCIIString writes s as a JSON string with Python's ensure_ascii
// escaping: everything outside printable ASCII as \uXXXX (UTF-16 surrogate
// pairs above U+FFFF), lower-case hex.
func writeASCIIString(b *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	u4 := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hexDigits[r>>12&0xf])
		b.WriteByte(hexDigits[r>>8&0xf])
		b.WriteByte(hexDigits[r>>4&0xf])
		b.WriteByte(hexDigits[r&0xf])
	}
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			u4(0xd800 + r>>10&0x3ff)
			u4(0xdc00 + r&0x3ff)
		default:
			u4(r)
		}
	}
	b.WriteByte('"')
}
