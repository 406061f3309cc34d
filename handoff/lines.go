package handoff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// lineStats is what copying one JSONL file kept and dropped.
type lineStats struct {
	Kept     int
	Dropped  int      // corrupt lines in the middle, and a torn last line
	Warnings []string // one per dropped line, naming it
}

// lineEdit returns the line to write in place of line (valid JSON, without
// its newline), or nil to write it unchanged. An error stops the copy.
type lineEdit func(n int, line []byte) ([]byte, error)

// copyLines copies the JSONL stream r to w line by line, through edit.
// Lines have no length limit (a single line of a real session reaches tens
// of megabytes); blank lines are skipped; a line that is not a JSON object
// is dropped with a warning, since all three tools have had versions that
// blank or truncate a session on one bad line; and a last line without its
// newline is a write torn mid-way and is dropped as well.
func copyLines(r io.Reader, w io.Writer, name string, edit lineEdit) (lineStats, error) {
	var st lineStats
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return st, fmt.Errorf("read %s: %w", name, err)
		}
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(line)) > 0 {
				st.Dropped++
				st.Warnings = append(st.Warnings, fmt.Sprintf("%s: dropped line %d: torn (no newline at the end; the tool was still writing)", name, n))
			}
			break
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) == 0 {
			continue
		}
		if trimmed[0] != '{' || !json.Valid(body) {
			st.Dropped++
			st.Warnings = append(st.Warnings, fmt.Sprintf("%s: dropped line %d: not a JSON object", name, n))
			continue
		}
		out := body
		if edit != nil {
			edited, err := edit(n, body)
			if err != nil {
				return st, fmt.Errorf("%s line %d: %w", name, n, err)
			}
			if edited != nil {
				out = edited
			}
		}
		if _, err := bw.Write(out); err != nil {
			return st, err
		}
		if err := bw.WriteByte('\n'); err != nil {
			return st, err
		}
		st.Kept++
	}
	return st, bw.Flush()
}

// firstLine returns the first line of the JSONL file r that is a JSON
// object, reading no further.
func firstLine(r io.Reader) ([]byte, bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if b := bytes.TrimSpace(line); len(b) > 0 && b[0] == '{' && json.Valid(b) && err == nil {
			return b, true
		}
		if err != nil {
			return nil, false
		}
	}
}
