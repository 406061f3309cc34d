package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress is shown for transfers on a terminal only, and only for ones
// big enough (or of unknown size) to be worth watching.
const (
	progressMinSize = 4 << 20
	progressEvery   = 200 * time.Millisecond
)

// transferProgress reports bytes transferred on stderr, redrawing one line. An
// upload's body is read by the HTTP transport's goroutine, hence the lock.
type transferProgress struct {
	mu      sync.Mutex
	w       io.Writer // nil: show nothing
	verb    string
	total   int64 // -1 when unknown
	n       int64
	started time.Time
	last    time.Time
	shown   bool
	ended   bool
}

func newTransferProgress(stdio IO, verb string, total int64) *transferProgress {
	p := &transferProgress{verb: verb, total: total, started: time.Now()}
	if stdio.ErrTTY && (total < 0 || total >= progressMinSize) {
		p.w = stdio.ErrOut
	}
	return p
}

// reader counts what passes through r.
func (p *transferProgress) reader(r io.Reader) io.Reader {
	if p.w == nil {
		return r
	}
	return &transferReader{r: r, p: p}
}

func (p *transferProgress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += int64(n)
	if now := time.Now(); now.Sub(p.last) >= progressEvery {
		p.last = now
		p.draw()
	}
}

func (p *transferProgress) draw() {
	line := fmt.Sprintf("%s %s", p.verb, humanBytes(p.n))
	if p.total > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", humanBytes(p.total), p.n*100/p.total)
	}
	if secs := time.Since(p.started).Seconds(); secs > 0.5 {
		line += fmt.Sprintf(", %s/s", humanBytes(int64(float64(p.n)/secs)))
	}
	// \x1b[K clears what a longer previous line left.
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.shown = true
}

// done draws the final count and ends the line; it may be called again.
func (p *transferProgress) done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	if p.shown {
		p.draw()
		fmt.Fprintln(p.w)
	}
}

type transferReader struct {
	r io.Reader
	p *transferProgress
}

func (r *transferReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.add(n)
	return n, err
}
