package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

const (
	binarySniff  = 8 << 10 // a NUL in this many leading bytes marks a file binary
	maxGrepLine  = 4 << 20 // bytes of one line matched against; the rest is skipped
	maxMatchText = 2000    // runes of a matching line returned in GrepMatch.Text
)

func (h *Handler) grep(w http.ResponseWriter, r *http.Request) error {
	var req api.GrepRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	out, err := h.grepFiles(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// grepFiles runs a /grep. A pattern or glob that does not compile is a
// 422 validation_error (the reference answered 200 with an error inside,
// which reads as "no matches" to a client that checks the status); the
// time cap is a result with Error set, since it carries what was found.
func (h *Handler) grepFiles(ctx context.Context, req api.GrepRequest) (api.GrepResult, error) {
	re, err := regexp.Compile(req.Pattern)
	if err != nil {
		return api.GrepResult{}, api.Invalid("pattern", "Invalid regex pattern: "+err.Error(),
			"patterns are RE2 (Go regexp) syntax; put a backslash before ( [ { . * + ? to match it literally")
	}
	var glob *regexp.Regexp
	if req.Glob != "" {
		if glob, err = fnmatch(req.Glob); err != nil {
			return api.GrepResult{}, api.Invalid("glob", "Invalid glob pattern: "+err.Error(), "use * ? and [abc], e.g. *.py")
		}
	}
	v, base, done, err := h.openTarget(req.Path, false)
	if err != nil {
		return api.GrepResult{}, err
	}
	defer done()
	lim := h.limits()
	tctx, cancel := context.WithTimeout(ctx, lim.GrepTimeout)
	defer cancel()
	g := &grepper{ctx: tctx, re: re, max: clampMatches(req.MaxMatches), budget: lim.GrepMaxBytes, matches: []api.GrepMatch{}}
	err = walkFiles(tctx, v, base, func(f found) error {
		if glob != nil && !globSelects(glob, f.virt, f.rel) {
			return nil
		}
		return g.file(f)
	})
	switch {
	case ctx.Err() != nil:
		return api.GrepResult{}, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return timedOut(lim.GrepTimeout), nil
	case err != nil:
		return api.GrepResult{}, err
	}
	return api.GrepResult{Matches: g.matches, Truncated: g.truncated}, nil
}

// clampMatches applies the reference's default and 1..5000 clamp.
func clampMatches(n int) int {
	if n == 0 {
		return api.DefaultGrepMatches
	}
	return min(max(n, 1), api.MaxGrepMatches)
}

// globSelects reports whether a /grep glob admits a file, matching its path
// relative to the search base, its workspace-relative path or its name.
func globSelects(glob *regexp.Regexp, virt, rel string) bool {
	if glob.MatchString(rel) || glob.MatchString(path.Base(virt)) {
		return true
	}
	ws, ok := strings.CutPrefix(virt, vWorkspace+"/")
	return ok && glob.MatchString(ws)
}

// grepper is the state of one /grep.
type grepper struct {
	ctx       context.Context
	re        *regexp.Regexp
	max       int
	budget    int64 // bytes left to scan
	matches   []api.GrepMatch
	truncated bool
	line      []byte // reused across lines
}

// file greps one file. It returns errStop once a cap is reached. Binary
// files are skipped: a NUL among the first bytes, or any line that is not
// UTF-8, which also drops the matches found in the file so far.
func (g *grepper) file(ff found) error {
	fd, err := unix.Openat(ff.dir, ff.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil // vanished or unreadable: skipped
	}
	f := os.NewFile(uintptr(fd), ff.name)
	defer f.Close()
	virt := ff.virt
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(binarySniff); bytes.IndexByte(head, 0) >= 0 {
		return nil
	}
	var found []api.GrepMatch
	for n := 1; ; n++ {
		line, eof, err := g.readLine(br)
		if err != nil {
			return nil
		}
		if len(line) == 0 && eof {
			break
		}
		if !utf8.Valid(line) {
			return nil
		}
		text := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if g.re.Match(text) {
			found = append(found, api.GrepMatch{Path: virt, Line: n, Text: clip(string(text))})
			if len(g.matches)+len(found) >= g.max {
				g.matches, g.truncated = append(g.matches, found...), true
				return errStop
			}
		}
		if g.budget <= 0 {
			g.matches, g.truncated = append(g.matches, found...), true
			return errStop
		}
		if n%1024 == 0 {
			if err := g.ctx.Err(); err != nil {
				return err
			}
		}
		if eof {
			break
		}
	}
	g.matches = append(g.matches, found...)
	return nil
}

// readLine reads the next line with its newline, charging it to the byte
// budget. A line past maxGrepLine is cut at a rune start, and the rest
// skipped. eof is set when the file ends after this line.
func (g *grepper) readLine(br *bufio.Reader) (line []byte, eof bool, err error) {
	g.line = g.line[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		g.budget -= int64(len(chunk))
		if room := maxGrepLine - len(g.line); room > 0 {
			g.line = append(g.line, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			eof = true
		} else if err != nil {
			return nil, false, err
		}
		break
	}
	if len(g.line) == maxGrepLine {
		cut := len(g.line)
		for cut > 0 && !utf8.RuneStart(g.line[cut-1]) {
			cut--
		}
		if cut > 0 {
			cut-- // drop the rune that may have been cut short, whole
		}
		g.line = g.line[:cut]
	}
	return g.line, eof, nil
}

// clip shortens a matching line to maxMatchText runes.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxMatchText {
		return s
	}
	i, n := 0, 0
	for i = range s {
		if n == maxMatchText {
			break
		}
		n++
	}
	return s[:i] + "..."
}

// fnmatch compiles a shell pattern with Python's fnmatch semantics: "*"
// and "?" match any characters including "/", "[...]" is a class ("[!...]"
// negated), and an unclosed "[" is literal.
func fnmatch(pat string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(pat); {
		switch c := pat[i]; c {
		case '*':
			for i < len(pat) && pat[i] == '*' {
				i++
			}
			b.WriteString(`.*`)
			continue
		case '?':
			b.WriteString(`.`)
		case '[':
			j := i + 1
			if j < len(pat) && pat[j] == '!' {
				j++
			}
			if j < len(pat) && pat[j] == ']' {
				j++
			}
			for j < len(pat) && pat[j] != ']' {
				j++
			}
			if j >= len(pat) {
				b.WriteString(`\[`)
				break
			}
			class := pat[i+1 : j]
			b.WriteByte('[')
			if strings.HasPrefix(class, "!") {
				b.WriteByte('^')
				class = class[1:]
			}
			for _, r := range class {
				if strings.ContainsRune(`\[]^`, r) {
					b.WriteByte('\\')
				}
				b.WriteRune(r)
			}
			b.WriteByte(']')
			i = j + 1
			continue
		default:
			r, size := utf8.DecodeRuneInString(pat[i:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += size
			continue
		}
		i++
	}
	b.WriteString(`)$`)
	return regexp.Compile(b.String())
}
