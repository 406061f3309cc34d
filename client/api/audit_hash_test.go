package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// hashByMap is LogEntry.Hash as it was written first: the entry's fields
// in a map, written by the generic canonical writer (keys sorted). Hash
// writes the fixed keys in their sorted order instead; the two must give
// the same bytes for every entry.
func hashByMap(e LogEntry, prev string) (string, error) {
	detail := e.Detail
	if len(bytes.TrimSpace(detail)) == 0 {
		detail = json.RawMessage("{}")
	}
	var d any
	dec := json.NewDecoder(bytes.NewReader(detail))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return "", err
	}
	var exit any
	if e.ExitCode != nil {
		exit = json.Number(fmt.Sprint(*e.ExitCode))
	}
	fields := map[string]any{
		"id": e.ID, "session_id": e.SessionID, "account_id": e.AccountID, "source": e.Source,
		"operation": e.Operation, "detail": d, "exit_code": exit, "output_truncated": e.OutputTruncated,
		"started_at": isoNaiveUTCByFormat(e.StartedAt), "duration_ms": json.Number(fmt.Sprint(e.DurationMS)),
	}
	var b bytes.Buffer
	b.WriteString(prev)
	b.WriteByte('|')
	if err := writeCanonical(&b, fields); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// isoNaiveUTCByFormat is Python's naive datetime.isoformat() as it was
// written first, with Format and Sprintf.
func isoNaiveUTCByFormat(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s
}

func checkHashByMap(t *testing.T, e LogEntry, prev string) {
	t.Helper()
	got, err := e.Hash(prev)
	want, wantErr := hashByMap(e, prev)
	if (err != nil) != (wantErr != nil) || got != want {
		t.Errorf("Hash(%+v, %q) = %q, %v; the map form gives %q, %v", e, prev, got, err, want, wantErr)
	}
}

func TestHashFixedKeysMatchMap(t *testing.T) {
	zero, minus, big := 0, -7, 1<<40
	for _, exit := range []*int{nil, &zero, &minus, &big} {
		for _, detail := range []string{"", " ", "{}", `{"command":"true","b":[1,2.5,null,{"z":1,"a":"é"}]}`, `{"x":1} trailing`, `{`, `[]`, `"s"`} {
			for _, at := range []time.Time{
				{},
				time.Date(2026, 12, 6, 0, 1, 2, 3000, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 999999999, time.FixedZone("x", -3600)),
				time.Date(-12, 3, 4, 5, 6, 7, 1000, time.UTC), time.Date(123456, 1, 1, 0, 0, 0, 10000, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 999, time.UTC),
			} {
				checkHashByMap(t, LogEntry{
					ID: "0198-é\u2028\"\\", SessionID: "sb😀", AccountID: "acct\x00\x7f", Source: LogSourceAgent,
					Operation: "exec", Detail: json.RawMessage(detail), ExitCode: exit, OutputTruncated: exit == nil,
					StartedAt: at, DurationMS: int64(len(detail)) - 3,
				}, GenesisHash)
			}
		}
	}
}

func FuzzHashFixedKeysMatchMap(f *testing.F) {
	f.Add("e1", "s1", "a1", "agent", "exec", `{"command":"true"}`, 0, true, false, int64(1733443200123456), int64(42), GenesisHash)
	f.Add("", "", "", "", "", "", -1, false, true, int64(0), int64(-1), "")
	f.Fuzz(func(t *testing.T, id, session, account, source, op, detail string, exit int, hasExit, truncated bool, startedUS, duration int64, prev string) {
		e := LogEntry{
			ID: id, SessionID: session, AccountID: account, Source: source, Operation: op,
			Detail: json.RawMessage(detail), OutputTruncated: truncated, StartedAt: time.UnixMicro(startedUS), DurationMS: duration,
		}
		if hasExit {
			e.ExitCode = &exit
		}
		checkHashByMap(t, e, prev)
	})
}

// BenchmarkLogEntryHash is the hash every audit append computes inside
// its group commit's transaction (model.ExecLogEntry.Seal), for an exec's
// entry.
func BenchmarkLogEntryHash(b *testing.B) {
	code := 0
	e := LogEntry{
		ID: "0198f0c2-7d1e-7b3a-9c1d-2b4e6f8a0c1e", SessionID: "sb-0198f0c2-7d1e", AccountID: "acct-0198f0c2",
		Source: LogSourceAgent, Operation: "exec", ExitCode: &code,
		Detail:    json.RawMessage(`{"command":"true","cwd":"/workspace","timeout":30,"stdout_bytes":0,"stderr_bytes":0}`),
		StartedAt: time.Date(2026, 12, 6, 0, 1, 2, 345678000, time.UTC), DurationMS: 1,
	}
	for b.Loop() {
		if _, err := e.Hash(GenesisHash); err != nil {
			b.Fatal(err)
		}
	}
}
