package sqldb

import (
	"context"
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/sys/unix"
)

// DollarPlaceholders rewrites ? placeholders as $1, $2, …, leaving quoted
// strings and identifiers alone.
func DollarPlaceholders(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	var quote byte
	for i := range len(q) {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Listen LISTENs on channel on a Postgres connection of its own to dsn,
// calls connected once it listens, and calls notify with each payload
// until ctx is done (nil) or the connection fails.
func Listen(ctx context.Context, dsn, channel string, notify func(payload string), connected func()) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("wait for notification: %w", err)
		}
		notify(n.Payload)
	}
}

// OpenPostgres opens the pool so that a connection is checked before it
// is used again: a session the server ended meanwhile (a restart, a
// failover, pg_terminate_backend after ALTER DATABASE … SET
// default_transaction_read_only) has sent its last words, or closed, and
// is dropped and another drawn, rather than failing the request that drew
// it. The check peeks at the socket without waiting: one system call.
func OpenPostgres(dsn string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse postgres url: %w", err)
	}
	return stdlib.OpenDB(*cfg, stdlib.OptionResetSession(func(_ context.Context, c *pgx.Conn) error {
		if !idleConnOK(c.PgConn().Conn()) {
			return driver.ErrBadConn
		}
		return nil
	})), nil
}

// idleConnOK reports whether an idle connection has nothing to read and
// is not closed: anything the server sends unasked on an idle session
// (a FATAL error as it ends it) means it is done with.
func idleConnOK(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true // cannot tell: let the query find out
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	healthy := true
	// Control, not Read: pgx may have a reader of its own parked on the
	// socket, holding the read lock; a peek that does not wait needs none.
	_ = rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		// Only "nothing to read yet" is healthy: a byte, an end of file
		// or a reset mean the session is over.
		healthy = errors.Is(err, unix.EAGAIN)
	})
	return healthy
}
