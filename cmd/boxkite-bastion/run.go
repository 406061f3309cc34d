package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// shutdownTimeout bounds how long open sessions get to end at shutdown.
const shutdownTimeout = 5 * time.Second

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	o, err := parseOptions(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		if _, ok := errors.AsType[*usageError](err); ok {
			return 2
		}
		return 1
	}
	if o.bastionKey, err = resolveKey(o, getenv); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		if _, ok := errors.AsType[*usageError](err); ok {
			return 2
		}
		return 1
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "error: --log-level %q: want debug, info, warn or error\n", o.logLevel)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintf(stderr, "error: listen: %v\n", err)
		return 1
	}
	if err := serve(ctx, o, ln, log); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// serve accepts SSH connections on ln until ctx is done.
func serve(ctx context.Context, o *options, ln net.Listener, log *slog.Logger) error {
	signer, err := hostKey(o.hostKey)
	if err != nil {
		ln.Close()
		return err
	}
	if o.hostKey == "" {
		log.Warn("no --host-key: using a key for this process only; clients will see a new host key at each start")
	}
	b := newBastion(o, log)
	srv := b.sshServer(signer)
	log.Info("boxkite-bastion listening", "addr", ln.Addr().String(), "server", o.server,
		"host_key", gossh.FingerprintSHA256(signer.PublicKey()))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	b.sessions.endAll()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, ssh.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
