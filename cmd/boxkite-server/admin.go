package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// The admin listener serves net/http/pprof, for operators chasing a leak
// or a hot loop. It is off unless --admin-listen names an address, and
// that address must be loopback: profiles and the command line it serves
// are the server's memory, and the listener has no authentication.

// checkLoopback accepts host:port whose host is a loopback IP or
// "localhost"; anything else (a wildcard, a routable address) is refused.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want HOST:PORT: %w", err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("not a loopback address; the profiling listener has no authentication")
	}
	return nil
}

// adminMux routes /debug/pprof/ on a mux of its own, never the global
// DefaultServeMux (which net/http/pprof also fills, unused here).
func adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// serveAdmin serves the profiling endpoints on ln until ctx is done.
func serveAdmin(ctx context.Context, ln net.Listener, log *slog.Logger) {
	// No write timeout: a CPU profile or trace answers after ?seconds=N.
	hs := &http.Server{Handler: adminMux(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("admin listener stopped", "err", err)
	}
}
