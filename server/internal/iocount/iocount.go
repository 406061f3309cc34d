// Package iocount counts the bytes that pass through a reader: the size
// of an upload for its audit entry (server/proxy, server/e2b/envd), the
// bytes a flush read (server/storagesync).
package iocount

import "io"

// Reader counts the bytes read through R in N.
type Reader struct {
	R io.Reader
	N int64
}

func (c *Reader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}
