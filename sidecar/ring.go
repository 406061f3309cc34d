package sidecar

import "sync"

// ring keeps the newest bytes written to it, up to a fixed size, and counts
// every byte ever written, so readers address output by absolute offset.
// Each write wakes the readers waiting on the channel from since.
type ring struct {
	mu      sync.Mutex
	buf     []byte // len == capacity; byte at offset o lives at buf[o%len(buf)]
	total   int64  // bytes ever written
	changed chan struct{}
	closed  bool
}

func newRing(size int) *ring {
	return &ring{buf: make([]byte, size), changed: make(chan struct{})}
}

// Write keeps the newest bytes of p and wakes the waiting readers. It never fails.
func (r *ring) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	size := int64(len(r.buf))
	if int64(n) > size {
		// Only the tail survives; skip the rest but still count it.
		r.total += int64(n) - size
		p = p[n-int(size):]
	}
	for len(p) > 0 {
		at := int(r.total % size)
		k := copy(r.buf[at:], p)
		p = p[k:]
		r.total += int64(k)
	}
	r.wake()
	return n, nil
}

// close wakes the readers for the last time: no more writes will come.
func (r *ring) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.wake()
	}
}

// wake closes the channel readers wait on and makes a new one; r.mu is held.
func (r *ring) wake() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// since returns the bytes kept from offset off on, the offset after them,
// and whether off fell before the kept window, in which case chunk is all
// that is kept. An offset past the end yields nothing. changed is closed by
// the next write, so a reader that found nothing new waits on it without
// missing a write that lands in between.
func (r *ring) since(off int64) (chunk []byte, next int64, truncated bool, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	size := int64(len(r.buf))
	first := max(r.total-size, 0) // the oldest offset still kept
	switch {
	case off < first:
		off, truncated = first, true
	case off > r.total:
		off = r.total
	}
	chunk = make([]byte, 0, r.total-off)
	for o := off; o < r.total; {
		at := o % size
		end := min(size, at+(r.total-o))
		chunk = append(chunk, r.buf[at:end]...)
		o += end - at
	}
	return chunk, r.total, truncated, r.changed
}

// bytes returns everything kept.
func (r *ring) bytes() []byte {
	b, _, _, _ := r.since(0)
	return b
}
