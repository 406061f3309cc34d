package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/sidecar"
)

// shutdownGrace is how long in-flight requests get after SIGTERM.
const shutdownGrace = 10 * time.Second

// tokenFileEnv names a file holding the token, for drivers that cannot pass
// a descriptor (a pod mounts its Secret as a file).
const tokenFileEnv = "BOXKITE_SIDECAR_TOKEN_FILE"

type serveFlags struct {
	listen       string
	tokenFD      int
	workspace    string
	runAs        string
	nested       bool
	budget       [2]int // max exec count, max exec seconds
	claimable    bool
	tlsCert      string // with tlsKey: serve TLS (a pod, reached over the network)
	tlsKey       string
	egress       string // the egress proxy's host:port, reached directly (a pod)
	egressSocket string // the egress proxy's unix socket, forwarded to (a local jail)
	idleThreads  int    // end idle OS threads down to this many once requests end (0: never)
}

func runServe(args []string) error {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.listen, "listen", "unix:/run/boxkite/sidecar.sock", "`address` to serve on: unix:PATH, tcp:HOST:PORT, or fd:N (an inherited listening socket)")
	fs.IntVar(&f.tokenFD, "token-fd", -1, "read the auth token from this inherited `fd` (default: the file named by $"+tokenFileEnv+")")
	bindServeFlags(fs, &f)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if err := lockDownServe(); err != nil {
		return err
	}
	token, err := readToken(f.tokenFD)
	if err != nil {
		return err
	}
	srv, errc, err := startServing(f, token, idleTrim(f.idleThreads))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// bindServeFlags binds serve's flags but --listen and --token-fd.
func bindServeFlags(fs *flag.FlagSet, f *serveFlags) {
	fs.StringVar(&f.workspace, "workspace", "/workspace", "workspace `dir`")
	fs.StringVar(&f.runAs, "run-as", "", "run commands as `uid:gid` (default: the sidecar's own user)")
	fs.BoolVar(&f.nested, "nested-userns", false, "reach --run-as through a nested user namespace (single-id jails)")
	fs.IntVar(&f.budget[0], "max-exec-count", 0, "exec budget: budgeted calls of the sandbox (0: 500, negative: no limit)")
	fs.IntVar(&f.budget[1], "max-exec-seconds", 0, "exec budget: seconds budgeted calls may run in all (0: 3600, negative: no limit)")
	fs.BoolVar(&f.claimable, "claimable", false, "serve POST /claim, which replaces the token once (every kube pod's sidecar: its mounted token only claims)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve TLS with this certificate `file` (PEM); needs --tls-key")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the private key `file` (PEM) of --tls-cert")
	fs.StringVar(&f.egress, "egress-proxy", "", "point commands at the egress proxy at `host:port` (a pod granted egress)")
	fs.StringVar(&f.egressSocket, "egress-socket", "", "forward the egress proxy's unix socket at `path` to commands (a local jail granted egress)")
	fs.IntVar(&f.idleThreads, "idle-threads", 0, "a second after its last request, end idle OS threads until `n` are left (0: keep them; a local jail's sidecar: 4)")
}

// startServing serves the sidecar API as f says, with token, in the
// background; errc yields the server's end.
// connState, when set, is the server's http.Server.ConnState.
func startServing(f serveFlags, token string, connState func(net.Conn, http.ConnState)) (*http.Server, <-chan error, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if token == "" {
		log.Warn("no sidecar token; every route but /health answers 503")
	}
	runAs, err := parseRunAs(f.runAs, f.nested)
	if err != nil {
		return nil, nil, err
	}
	ln, err := listen(f.listen)
	if err != nil {
		return nil, nil, err
	}
	if f.tlsCert != "" {
		if ln, err = tlsListener(ln, f.tlsCert, f.tlsKey); err != nil {
			return nil, nil, err
		}
	} else {
		ln = apihttp.Listener(rawListener{ln}) // a jail's unix socket: raw reads and writes (rawconn_linux.go)
	}
	env, err := startEgress(log, f.workspace, f.egress, f.egressSocket)
	if err != nil {
		return nil, nil, err
	}
	h := sidecar.New(sidecar.Options{
		Token: token, Version: buildVersion(), Log: log, Workspace: f.workspace, RunAs: runAs, Env: env,
		Tools:       sidecar.ToolLimits{MaxExecCount: f.budget[0], MaxExecSeconds: f.budget[1]},
		Claimable:   f.claimable,
		SelfCommand: selfCommand,
		Usage:       cgroupUsage(),
	})
	if f.claimable {
		// A warm pool's member: what the first exec pays once is paid now,
		// before the driver sees it ready, not after its claim.
		if err := h.Warm(context.Background()); err != nil {
			log.Warn("warm-up exec failed; the first exec pays its start", "err", err)
		}
	}
	srv := apihttp.NewServer(h, log)
	srv.ConnState = connState
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // ln is an apihttp listener: net/http's own refusals are JSON too
	log.Info("serving", "listen", f.listen, "version", buildVersion())
	return srv, errc, nil
}

// readToken reads the token from fd, or else from the file named by
// $BOXKITE_SIDECAR_TOKEN_FILE. Neither argv nor the environment carries the
// token itself: both are readable by anyone who can see this process.
func readToken(fd int) (string, error) {
	var r io.ReadCloser
	switch {
	case fd >= 0:
		f := os.NewFile(uintptr(fd), "token")
		if f == nil {
			return "", fmt.Errorf("read token: fd %d is not open", fd)
		}
		r = f
	case os.Getenv(tokenFileEnv) != "":
		f, err := os.Open(os.Getenv(tokenFileEnv))
		if err != nil {
			return "", fmt.Errorf("read token: %w", err)
		}
		r = f
	default:
		return "", nil
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func parseRunAs(s string, nested bool) (*sidecar.RunAs, error) {
	if s == "" {
		return nil, nil
	}
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return nil, fmt.Errorf("parse --run-as %q: want uid:gid", s)
	}
	return &sidecar.RunAs{UID: uid, GID: gid, NestedUserNS: nested}, nil
}

// tlsListener serves TLS on ln with the pair in certFile and keyFile: the
// kube driver made the certificate and pins it, so no client certificate
// or chain is involved.
func tlsListener(ln net.Listener, certFile, keyFile string) (net.Listener, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("load TLS pair: %w", err)
	}
	return apihttp.TLSListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}), nil
}

// listen opens addr. fd:N is a listening socket inherited as descriptor N
// (the local driver makes the sidecar's outside the jail). A unix socket
// is created 0600 (via the umask, so there is no window) after removing a
// stale one; the directory it lives in must keep others out.
func listen(addr string) (net.Listener, error) {
	network, address, ok := strings.Cut(addr, ":")
	if !ok || (network != "unix" && network != "tcp" && network != "fd") {
		return nil, fmt.Errorf("parse --listen %q: want unix:PATH, tcp:HOST:PORT or fd:N", addr)
	}
	if network == "fd" {
		return inheritedListener(address)
	}
	if network == "tcp" {
		ln, err := net.Listen("tcp", address)
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		return ln, nil
	}
	if fi, err := os.Lstat(address); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if err := os.Remove(address); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	} else if err == nil {
		return nil, fmt.Errorf("listen: %s exists and is not a socket", address)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("listen: %w", err)
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", address)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// inheritedListener serves on the listening socket inherited as
// descriptor fd, which must be one.
func inheritedListener(fd string) (net.Listener, error) {
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return nil, fmt.Errorf("parse --listen fd:%s: want a descriptor number of 3 or more", fd)
	}
	f := os.NewFile(uintptr(n), "listener")
	if f == nil {
		return nil, fmt.Errorf("listen: fd %d is not open", n)
	}
	defer f.Close() // FileListener keeps a duplicate
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listen on fd %d: %w", n, err)
	}
	return ln, nil
}
