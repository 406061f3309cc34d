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

// errNoRecords is a JSONL file without a single valid line: nothing a
// tool could resume from.
var errNoRecords = errors.New("holds no complete JSON record")

// lineEdit returns the line to write in place of line (valid JSON, without
// its newline), or nil to write it unchanged. An error stops the copy.
type lineEdit func(n int, line []byte) ([]byte, error)

// copyLines copies the JSONL stream r to w line by line, through edit.
// Lines have no length limit (a single line of a real session reaches tens
// of megabytes); blank lines are skipped; a line that is not a JSON object
// is dropped with a warning, since all three tools have had versions that
// blank or truncate a session on one bad line. A last line without its
// newline is kept when it is a complete JSON object (some writers end the
// file without one) and dropped as torn otherwise: the tool was writing it.
// A stream with no valid line at all is errNoRecords.
func copyLines(r io.Reader, w io.Writer, name string, edit lineEdit) (lineStats, error) {
	var st lineStats
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return st, fmt.Errorf("read %s: %w", name, err)
		}
		last := errors.Is(err, io.EOF)
		body := bytes.TrimSuffix(line, []byte("\n"))
		trimmed := bytes.TrimSpace(body)
		switch {
		case len(trimmed) == 0:
		case trimmed[0] != '{' || !json.Valid(body):
			st.Dropped++
			why := "not a JSON object"
			if last {
				why = "incomplete (no newline at the end and not valid JSON: the tool was still writing it)"
			}
			st.Warnings = append(st.Warnings, fmt.Sprintf("%s: dropped line %d: %s", name, n, why))
		default:
			if err := writeLine(bw, edit, n, body); err != nil {
				return st, fmt.Errorf("%s line %d: %w", name, n, err)
			}
			st.Kept++
		}
		if last {
			break
		}
	}
	if st.Kept == 0 {
		return st, fmt.Errorf("%s %w", name, errNoRecords)
	}
	return st, bw.Flush()
}

// writeLine writes one kept line, edited, with its newline.
func writeLine(bw *bufio.Writer, edit lineEdit, n int, body []byte) error {
	out := body
	if edit != nil {
		edited, err := edit(n, body)
		if err != nil {
			return err
		}
		if edited != nil {
			out = edited
		}
	}
	if _, err := bw.Write(out); err != nil {
		return err
	}
	return bw.WriteByte('\n')
}

// firstLine returns the first line of the JSONL file r that is a JSON
// object, reading no further. The last line counts without its newline.
func firstLine(r io.Reader) ([]byte, bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if b := bytes.TrimSpace(line); len(b) > 0 && b[0] == '{' && json.Valid(b) {
			return b, true
		}
		if err != nil {
			return nil, false
		}
	}
}
