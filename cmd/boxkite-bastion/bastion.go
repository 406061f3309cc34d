package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/netsource"
)

// authTimeout bounds one call to the control plane during authentication.
const authTimeout = 10 * time.Second

// sandboxIDPattern is what a sandbox id (the SSH user name) may look like;
// anything else is refused without asking the control plane.
var sandboxIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// bastion serves SSH sessions by relaying them to the control plane.
type bastion struct {
	server       string         // the control plane's base URL
	cp           *client.Client // authenticated with the bastion key
	log          *slog.Logger
	maxPerSource int
	maxStartups  int
	loginTimeout time.Duration

	mu         sync.Mutex
	perSource  map[string]int // open connections by source (sourceKey)
	startups   int            // connections not authenticated yet
	throttling bool           // refusing connections past maxStartups
	refused    int            // connections refused since throttling began

	sessions *sessionSet // open sessions, told when the bastion stops
}

func newBastion(o *options, log *slog.Logger) *bastion {
	return &bastion{
		server:       o.server,
		cp:           client.New(o.server, o.bastionKey),
		log:          log,
		maxPerSource: o.maxPerSource,
		maxStartups:  o.maxStartups,
		loginTimeout: o.loginTimeout,
		perSource:    map[string]int{},
		sessions:     newSessionSet(),
	}
}

// permKey is the Permissions extension naming the public key (in
// authorized_keys form) a connection authenticated with.
const permKey = "boxkite-public-key"

var errDenied = errors.New("permission denied")

// sshServer is the SSH server of b with host key signer.
func (b *bastion) sshServer(signer ssh.Signer) *ssh.Server {
	return &ssh.Server{
		Handler:     b.session,
		HostSigners: []ssh.Signer{signer},
		// The fingerprint tells boxkite up that the bastion answering is
		// the one it started (the host key is its BOXKITE_HOME's), not
		// another up's that bound the port first.
		Version:         "boxkite-bastion " + gossh.FingerprintSHA256(signer.PublicKey()),
		PasswordHandler: b.password,
		// OpenSSH tries keyboard-interactive after its keys: the prompt
		// tells someone without a registered key what to do.
		KeyboardInteractiveHandler: b.keyboardInteractive,
		ConnCallback:               b.conn,
		// A session ending at shutdown says so (shutdown.go).
		SessionRequestCallback: func(sess ssh.Session, _ string) bool { return b.sessions.add(sess) },
		ConnectionFailedCallback: func(c net.Conn, err error) {
			b.log.Debug("ssh handshake failed", "source", c.RemoteAddr().String(), "err", err)
		},
		// Public keys are checked here rather than through
		// PublicKeyHandler, to return Permissions of their own: a client
		// may offer several keys and prove it holds only one (or none, and
		// then use a password), and x/crypto/ssh keeps the Permissions of
		// the one that authenticated. The session reads them back.
		ServerConfigCallback: func(ctx ssh.Context) *gossh.ServerConfig {
			return &gossh.ServerConfig{
				MaxAuthTries: maxAuthTries,
				// The connection is no longer a startup once authenticated.
				AuthLogCallback: func(_ gossh.ConnMetadata, _ string, err error) {
					if once, _ := ctx.Value(startupKey{}).(*sync.Once); err == nil {
						b.endStartup(once)
					}
				},
				PublicKeyCallback: func(meta gossh.ConnMetadata, key gossh.PublicKey) (*gossh.Permissions, error) {
					line, err := b.publicKey(ctx, meta, key)
					if err != nil {
						return nil, err
					}
					return &gossh.Permissions{Extensions: map[string]string{permKey: line}}, nil
				},
			}
		},
		// sftp, scp in its default (sftp) mode and editors' remote-SSH
		// modes ask for the sftp subsystem; any other is refused.
		SubsystemHandlers: map[string]ssh.SubsystemHandler{"sftp": b.sftp},
		// Sessions only (forwarding channels are refused), a few at once.
		ChannelHandlers: map[string]ssh.ChannelHandler{"session": sessionChannel},
	}
}

// maxSessions bounds the session channels open at once on one connection,
// as OpenSSH's sshd does (MaxSessions, 10 by default): each costs the
// bastion memory whether or not it ever runs anything, and nothing else
// bounds how many a client opens (20000 idle ones held 120 MB).
const maxSessions = 10

type openSessionsKey struct{}

// sessionChannel serves a session channel, or refuses it past maxSessions
// on its connection.
func sessionChannel(srv *ssh.Server, conn *gossh.ServerConn, ch gossh.NewChannel, ctx ssh.Context) {
	n, _ := ctx.Value(openSessionsKey{}).(*atomic.Int32)
	if n == nil {
		ch.Reject(gossh.ResourceShortage, "no session count") // conn sets one up
		return
	}
	if n.Add(1) > maxSessions {
		n.Add(-1)
		ch.Reject(gossh.ResourceShortage, fmt.Sprintf("at most %d sessions at once on one connection", maxSessions))
		return
	}
	defer n.Add(-1)
	ssh.DefaultSessionHandler(srv, conn, ch, ctx)
}

// conn admits a connection: at most maxPerSource at once from one source
// (an address, an IPv6 /64), at most maxStartups unauthenticated at once
// in all, and closed unless authenticated within loginTimeout. A refused
// connection is closed before the SSH handshake.
func (b *bastion) conn(ctx ssh.Context, c net.Conn) net.Conn {
	src := sourceKey(c.RemoteAddr())
	if !b.admit(src) {
		return nil
	}
	ctx.SetValue(openSessionsKey{}, new(atomic.Int32))
	startup := new(sync.Once)
	ctx.SetValue(startupKey{}, startup)
	c = &preambleConn{Conn: c, found: func(id string) { ctx.SetValue(sandboxKey{}, id) }}
	// ContextKeyConn is set once the handshake, authentication included,
	// has succeeded.
	timer := time.AfterFunc(b.loginTimeout, func() {
		if ctx.Value(ssh.ContextKeyConn) == nil {
			b.log.Info("login timed out", "source", src)
			c.Close()
		}
	})
	go func() {
		<-ctx.Done() // the connection closed
		timer.Stop()
		b.endStartup(startup)
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.perSource[src]--; b.perSource[src] <= 0 {
			delete(b.perSource, src)
		}
	}()
	return c
}

// admit counts a new connection from src, or reports false (logged) when
// its source or the bastion's unauthenticated connections are at their
// limit.
func (b *bastion) admit(src string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.startups >= b.maxStartups {
		b.refused++
		if !b.throttling {
			b.throttling = true
			b.log.Warn("too many unauthenticated connections: refusing new ones until some authenticate or close",
				"limit", b.maxStartups, "source", src)
		}
		return false
	}
	if b.perSource[src] >= b.maxPerSource {
		b.log.Warn("too many connections from one source", "source", src, "limit", b.maxPerSource)
		return false
	}
	b.perSource[src]++
	b.startups++
	return true
}

type startupKey struct{}

// endStartup counts a connection (its once) off the unauthenticated ones,
// once: when it authenticates or closes, whichever comes first.
func (b *bastion) endStartup(once *sync.Once) {
	if once == nil {
		return
	}
	once.Do(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.startups--
		if b.throttling {
			b.throttling = false
			b.log.Info("accepting connections again", "unauthenticated", b.startups, "refused", b.refused)
			b.refused = 0
		}
	})
}

// sourceKey is what a connection's limits count it against
// (netsource.Key: its address, or the /64 of an IPv6 one).
func sourceKey(addr net.Addr) string { return netsource.Key(addr.String()) }

// tokenStash carries the takeover token won at authentication to the
// first session of the connection.
type tokenStash struct {
	mu    sync.Mutex
	token string
	key   string // the public key (authorized_keys) it was minted for; "" for a password
}

type stashKey struct{}

func stashOf(ctx ssh.Context) *tokenStash {
	if s, ok := ctx.Value(stashKey{}).(*tokenStash); ok {
		return s
	}
	s := &tokenStash{}
	ctx.SetValue(stashKey{}, s)
	return s
}

func (s *tokenStash) put(token, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token, s.key = token, key
}

// take returns the stashed token if it was minted for key, once.
func (s *tokenStash) take(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" || s.key != key {
		return ""
	}
	t := s.token
	s.token = ""
	return t
}

// password accepts a takeover token for the sandbox named by the user
// name. The control plane spends it and answers with a fresh token for the
// session, so a bad, used or expired token fails here, at the prompt.
func (b *bastion) password(ctx ssh.Context, password string) bool {
	sandbox := sandboxOf(ctx, ctx.User())
	if password == "" || !sandboxIDPattern.MatchString(sandbox) {
		return false
	}
	tok, err := b.mint(ctx, api.BastionTokenRequest{SandboxID: sandbox, Token: password})
	if err != nil {
		b.authFailed(ctx, "password", sandbox, ctx.RemoteAddr(), err)
		return false
	}
	stashOf(ctx).put(tok, "")
	return true
}

// keyboardInteractive is where OpenSSH ends up when no key it offered
// was accepted (or it had none): the instruction says why and what to do,
// once per connection (a refused key's banner said it already), and a
// takeover token typed at the prompt is taken as the password.
func (b *bastion) keyboardInteractive(ctx ssh.Context, ask gossh.KeyboardInteractiveChallenge) bool {
	sandbox := sandboxOf(ctx, ctx.User())
	instruction := ""
	if ctx.Value(bannerSentKey{}) == nil {
		ctx.SetValue(bannerSentKey{}, true)
		instruction = fmt.Sprintf("boxkite-bastion: no SSH key registered to the account of sandbox %s was offered, or there is no such sandbox\n", shownUser(sandbox)) +
			"hint: register yours with `boxkite ssh-keys add ~/.ssh/id_ed25519.pub`, check the id with `boxkite session ls`, " +
			"or run `boxkite ssh -s ID`, which needs no key; a takeover token (`boxkite ssh -s ID --print --token`) is accepted below"
		if !sandboxIDPattern.MatchString(sandbox) {
			instruction = fmt.Sprintf("boxkite-bastion: %s is not a sandbox id\nhint: connect as ssh -p PORT <sandbox-id>@HOST; `boxkite session ls` lists the ids", shownUser(sandbox))
		}
	}
	if !sandboxIDPattern.MatchString(sandbox) {
		_, _ = ask("", instruction, nil, nil)
		return false
	}
	answers, err := ask("", instruction, []string{"takeover token: "}, []bool{false})
	if err != nil || len(answers) != 1 {
		return false
	}
	return b.password(ctx, strings.TrimSpace(answers[0]))
}

// publicKey accepts a key registered to the account owning the sandbox,
// and returns it in authorized_keys form. It may be asked about a key
// before the client proves it holds it; the token minted then is only used
// by a session of a connection that authenticated with that key. A refusal
// carries, once per connection, a banner saying what to do about it.
func (b *bastion) publicKey(ctx ssh.Context, meta gossh.ConnMetadata, key ssh.PublicKey) (string, error) {
	sandbox := sandboxOf(ctx, meta.User())
	if !sandboxIDPattern.MatchString(sandbox) {
		return "", refusal(ctx, "", shownUser(sandbox)+" is not a sandbox id",
			"connect as ssh -p PORT <sandbox-id>@HOST; `boxkite session ls` lists the ids")
	}
	line := authorizedKey(key)
	tok, err := b.mint(ctx, api.BastionTokenRequest{SandboxID: sandbox, PublicKey: line})
	if err != nil {
		b.authFailed(ctx, "publickey", sandbox, meta.RemoteAddr(), err)
		what, hint := refusalText(sandbox, key, err)
		kind := ""
		if e, ok := errors.AsType[*api.Error](err); ok && (e.Status == 409 || e.Status == 410) {
			// The key is the sandbox's account's: its state is news even
			// after an unregistered key's banner.
			kind = what
		}
		return "", refusal(ctx, kind, what, hint)
	}
	stashOf(ctx).put(tok, line)
	return line, nil
}

func authorizedKey(k ssh.PublicKey) string {
	return strings.TrimSpace(string(gossh.MarshalAuthorizedKey(k)))
}

func (b *bastion) mint(ctx context.Context, req api.BastionTokenRequest) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	tok, err := b.cp.BastionTakeoverToken(ctx, req)
	if err != nil {
		return "", err
	}
	return tok.Token, nil
}

// authFailed logs why; the client only learns that it failed.
func (b *bastion) authFailed(ctx context.Context, method, user string, source net.Addr, err error) {
	level := slog.LevelInfo
	if _, ok := errors.AsType[*api.Error](err); !ok {
		level = slog.LevelError // the control plane did not answer
	}
	b.log.Log(ctx, level, "authentication failed", "method", method, "user", user, "source", source.String(), "err", err)
}

// sessionToken is the token for a new session: the one stashed at
// authentication, else (a second session on the connection) a new one
// for the public key. A token password opens one session only.
func (b *bastion) sessionToken(s ssh.Session) (string, error) {
	key := authenticatedKey(s.Context())
	if t := stashOf(s.Context()).take(key); t != "" {
		return t, nil
	}
	if key == "" {
		return "", errors.New("a takeover token opens one session; mint another with `boxkite ssh`")
	}
	return b.mint(s.Context(), api.BastionTokenRequest{SandboxID: sandboxOf(s.Context(), s.User()), PublicKey: key})
}

// authenticatedKey is the public key the connection authenticated with,
// "" for a password.
func authenticatedKey(ctx ssh.Context) string {
	conn, _ := ctx.Value(ssh.ContextKeyConn).(*gossh.ServerConn)
	if conn == nil || conn.Permissions == nil {
		return ""
	}
	return conn.Permissions.Extensions[permKey]
}

// session serves one SSH session: the shared terminal, or a command.
func (b *bastion) session(s ssh.Session) {
	c, ok := b.sessionClient(s)
	if !ok {
		return
	}
	if s.RawCommand() != "" {
		b.exec(s, c, api.InteractiveRequest{Command: s.RawCommand()})
		return
	}
	b.shell(s, c)
}

// sftp serves the sftp subsystem: an SFTP server in the sandbox, as the
// sandbox user, reached like any command (scp, sftp, rsync's remote half
// and editors all work on the sandbox's own files).
func (b *bastion) sftp(s ssh.Session) {
	if c, ok := b.sessionClient(s); ok {
		b.exec(s, c, api.InteractiveRequest{Subsystem: api.SubsystemSFTP})
	}
}

// sessionClient is a control-plane client holding the session's token; on
// failure the session has been told why and ended.
func (b *bastion) sessionClient(s ssh.Session) (*client.Client, bool) {
	token, err := b.sessionToken(s)
	if err != nil {
		fail(s, err)
		return nil, false
	}
	return client.New(b.server, token), true
}

// fail tells the person what went wrong, on stderr, and ends the session.
func fail(s ssh.Session, err error) {
	msg := "boxkite-bastion: error: " + err.Error()
	if e, ok := errors.AsType[*api.Error](err); ok {
		msg = "boxkite-bastion: error: " + e.Message
		if e.Hint != "" {
			msg += "\r\nhint: " + e.Hint
		}
	}
	if e, ok := errors.AsType[*client.SandboxEndedError](err); ok {
		switch id := sandboxOf(s.Context(), s.User()); {
		case e.Paused() && s.RawCommand() == "" && s.Subsystem() == "":
			msg += "\r\nhint: resume it with `boxkite session resume " + id + "`, then connect again"
		case e.Paused():
			msg += "\r\nhint: resume it with `boxkite session resume " + id + "`, then run the command again"
		default:
			msg += "\r\nhint: create a new one with `boxkite session create`"
		}
	}
	fmt.Fprint(s.Stderr(), msg+"\r\n")
	_ = s.Exit(1)
}

// exec runs req through the control plane's interactive exec and exits
// with its status: stdin streams as the client sends it (its end is the
// command's end of input), output bytes pass unchanged, and when the
// client asked for a PTY the command runs on one, as under OpenSSH's sshd,
// with the window size and its changes. A signal request (RFC 4254 §6.9:
// INT, TERM, HUP, KILL; others are dropped, as sshd drops one it does not
// know) goes to the command's process group.
func (b *bastion) exec(s ssh.Session, c *client.Client, req api.InteractiveRequest) {
	ctx, cancel := context.WithCancel(s.Context())
	defer cancel()
	pty, winch, tty := s.Pty()
	if tty && req.Subsystem == "" {
		req.TTY, req.Cols, req.Rows, req.Term = true, pty.Window.Width, pty.Window.Height, pty.Term
	}
	// Registered first: a signal requested before the command started
	// is held and goes once it runs.
	sigs := make(chan ssh.Signal, 4)
	s.Signals(sigs)
	defer s.Signals(nil)
	x, err := c.StartInteractive(ctx, sandboxOf(s.Context(), s.User()), req)
	if err != nil {
		fail(s, err)
		return
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				// Read on until the end, failed or not: the session's
				// request loop waits on this channel.
				_ = x.SendSignal(ctx, "SIG"+string(sig))
			}
		}
	}()
	if req.TTY {
		go func() {
			for w := range winch {
				if x.Resize(ctx, w.Width, w.Height) != nil {
					return
				}
			}
		}()
	}
	code, err := x.Run(ctx, s, s, s.Stderr())
	if err != nil {
		if ctx.Err() == nil {
			fail(s, err)
		}
		return
	}
	if x.StopReason() == api.StopReasonMemoryLimit {
		fmt.Fprint(s.Stderr(), memoryLimitNote(code))
	}
	exit(s, code, x.Signal())
}

// shell attaches the session to the sandbox's shared terminal until the
// shell exits (the session exits with its status) or the person
// disconnects (which only detaches). A session without a PTY (a script:
// `ssh id@host < file`) also detaches at the end of its input, once what
// it typed was delivered and the output already relayed was passed on,
// and exits 0 unless the script ended the shell, as sshd's shell ends at
// EOF.
func (b *bastion) shell(s ssh.Session, c *client.Client) {
	ctx, cancel := context.WithCancel(s.Context())
	defer cancel()
	t, err := c.AttachWithToken(ctx, sandboxOf(s.Context(), s.User()), c.APIKey)
	if err != nil {
		fail(s, err)
		return
	}
	defer t.Close()
	pty, winch, tty := s.Pty()
	if tty {
		if err := t.Resize(pty.Window.Width, pty.Window.Height); err != nil {
			fail(s, err)
			return
		}
		go func() {
			for w := range winch {
				if t.Resize(w.Width, w.Height) != nil {
					return
				}
			}
		}()
	}
	go func() {
		// Keystrokes go as they come; at the end of input a person on a
		// PTY keeps watching until they disconnect or the shell exits.
		_, _ = io.Copy(t, s)
		if !tty {
			_ = t.DetachWhenIdle()
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(s, t)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			fail(s, err)
			return
		}
		// The shell exited, with its status; a sidecar older than the
		// exit message does not say it, nor does a detach at the end of
		// a script's input (the shell runs on): 0, as sshd's shell at EOF.
		code, signal, _ := t.Exited()
		exit(s, code, signal)
	case <-ctx.Done():
	}
}
