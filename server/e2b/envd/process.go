package envd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
)

// A process is one command started by process.Process/Start: a relay of
// the sidecar's interactive exec (/exec/interactive), held by this server
// rather than by the client's stream, so a client that hangs up leaves it
// running (that is how the SDK's background commands work). Its output is
// fanned out to every stream attached to it: the one that started it and
// any Connect(pid). Pids are numbers this server hands out per sandbox; the
// SDK only uses them as handles.
type proc struct {
	pid    uint32
	config *process.ProcessConfig
	tag    *string
	tty    bool
	conn   *websocket.Conn
	cancel context.CancelFunc // ends the relay, and with it the command

	writeMu sync.Mutex // frames to the sidecar: input, eof, resize

	mu       sync.Mutex
	subs     map[chan *process.ProcessEvent]struct{}
	killed   bool // SendSignal or the Start deadline ended it
	done     chan struct{}
	stdinLen atomic.Int64
	// noStdin: started without stdin (stdin: false) or closeStdin closed
	// it; stdin sent after is refused, as envd refuses it, not dropped.
	noStdin atomic.Bool
	outLen  [3]atomic.Int64 // by api.Stream*
}

// procTable holds the running processes of every sandbox this server
// relays commands for.
type procTable struct {
	mu      sync.Mutex
	nextPID map[string]uint32
	procs   map[string]map[uint32]*proc // sandbox id → pid → process
}

func newProcTable() *procTable {
	return &procTable{nextPID: map[string]uint32{}, procs: map[string]map[uint32]*proc{}}
}

// firstPID is the first pid handed out in a sandbox: well clear of the
// small numbers a reader might take for init or the shell.
const firstPID = 1000

func (t *procTable) add(sandboxID string, p *proc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nextPID[sandboxID] == 0 {
		t.nextPID[sandboxID] = firstPID
	}
	p.pid = t.nextPID[sandboxID]
	t.nextPID[sandboxID]++
	if t.procs[sandboxID] == nil {
		t.procs[sandboxID] = map[uint32]*proc{}
	}
	t.procs[sandboxID][p.pid] = p
}

func (t *procTable) remove(sandboxID string, pid uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.procs[sandboxID], pid)
	if len(t.procs[sandboxID]) == 0 {
		delete(t.procs, sandboxID)
	}
}

// get finds a running process by its selector.
func (t *procTable) get(sandboxID string, sel *process.ProcessSelector) (*proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.procs[sandboxID] {
		switch s := sel.GetSelector().(type) {
		case *process.ProcessSelector_Pid:
			if p.pid == s.Pid {
				return p, nil
			}
		case *process.ProcessSelector_Tag:
			if p.tag != nil && *p.tag == s.Tag {
				return p, nil
			}
		}
	}
	return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process %s not found", selectorText(sel)))
}

func (t *procTable) list(sandboxID string) []*proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.Collect(maps.Values(t.procs[sandboxID]))
	slices.SortFunc(out, func(a, b *proc) int { return int(a.pid) - int(b.pid) })
	return out
}

func selectorText(sel *process.ProcessSelector) string {
	if tag, ok := sel.GetSelector().(*process.ProcessSelector_Tag); ok {
		return fmt.Sprintf("with tag %q", tag.Tag)
	}
	return fmt.Sprintf("with pid %d", sel.GetPid())
}

// subscribe attaches a stream; it receives every event from now on and is
// closed after the end event. ok is false once the process has ended.
func (p *proc) subscribe() (ch chan *process.ProcessEvent, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.subs == nil {
		return nil, false
	}
	ch = make(chan *process.ProcessEvent, 64)
	p.subs[ch] = struct{}{}
	return ch, true
}

func (p *proc) unsubscribe(ch chan *process.ProcessEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.subs[ch]; ok {
		delete(p.subs, ch)
		close(ch)
	}
}

// publish hands ev to every attached stream. A stream that has fallen
// behind by a whole buffer is waited for, up to slowSubscriber, then
// dropped: output is never reordered, and one stuck client cannot stall
// the command for the others for long.
func (p *proc) publish(ev *process.ProcessEvent) {
	p.mu.Lock()
	subs := slices.Collect(maps.Keys(p.subs))
	p.mu.Unlock()
	for _, ch := range subs {
		select {
		case ch <- ev:
			continue
		default:
		}
		t := time.NewTimer(slowSubscriber)
		select {
		case ch <- ev:
		case <-t.C:
			p.unsubscribe(ch)
		}
		t.Stop()
	}
}

// slowSubscriber is how long output waits for a stream whose buffer is full.
const slowSubscriber = 30 * time.Second

// finish publishes the end event and closes every stream.
func (p *proc) finish(end *process.ProcessEvent) {
	p.publish(end)
	p.mu.Lock()
	subs := p.subs
	p.subs = nil
	p.mu.Unlock()
	for ch := range subs {
		close(ch)
	}
	close(p.done)
}

// send writes one frame to the sidecar.
func (p *proc) send(ctx context.Context, typ websocket.MessageType, b []byte) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return p.conn.Write(ctx, typ, b)
}

func (p *proc) control(ctx context.Context, c api.InteractiveControl) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return p.send(ctx, websocket.MessageText, b)
}

// kill ends the command: the sidecar kills its process group when the
// relay goes away.
func (p *proc) kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	p.cancel()
}

// info is the process as List shows it.
func (p *proc) info() *process.ProcessInfo {
	return &process.ProcessInfo{Config: p.config, Pid: p.pid, Tag: p.tag}
}

// shellCommand turns an envd process config into the /bin/sh command the
// sidecar runs: the environment exported, then exec of the program with
// its arguments, each word quoted. A variable whose name the shell cannot
// export (E2B allows any name without "=") goes through env instead, at
// the cost of one more program start.
func shellCommand(cfg *process.ProcessConfig, env map[string]string) (string, error) {
	if cfg.GetCmd() == "" {
		return "", connect.NewError(connect.CodeInvalidArgument, errors.New("process.cmd must not be empty"))
	}
	var exports, assigns []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(env[k], 0) {
			return "", connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("environment variable %q is not valid", k))
		}
		if shellName.MatchString(k) {
			exports = append(exports, "export "+k+"="+shellQuote(env[k])+"; ")
		} else {
			assigns = append(assigns, shellQuote(k+"="+env[k]))
		}
	}
	words := []string{"exec"}
	if len(assigns) > 0 {
		words = append(append(words, "env", "--"), assigns...)
	}
	words = append(words, shellQuote(cfg.GetCmd()))
	for _, a := range cfg.GetArgs() {
		if strings.ContainsRune(a, 0) {
			return "", connect.NewError(connect.CodeInvalidArgument, errors.New("an argument contains a NUL byte"))
		}
		words = append(words, shellQuote(a))
	}
	return strings.Join(exports, "") + strings.Join(words, " "), nil
}

// shellName is what /bin/sh accepts as a variable name.
var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// allowlistCommand is what the account's allowlist is asked about: the
// command line the user wrote (bash -c's argument, as the SDK's
// commands.run sends it), else the program and its arguments.
func allowlistCommand(cfg *process.ProcessConfig) string {
	args := cfg.GetArgs()
	if i := slices.Index(args, "-c"); i >= 0 && i+1 < len(args) && isShell(cfg.GetCmd()) {
		return args[i+1]
	}
	return strings.Join(append([]string{cfg.GetCmd()}, args...), " ")
}

// checkedCommand is what the account's allowlist checks before cfg runs
// with env: the names of env as assignments on a line of their own (so
// PATH, LD_PRELOAD, BASH_ENV and the others /v1 refuses are refused here
// too; values do not matter), then the command line. That is a shell's
// script when cfg is the shell the SDK starts, named as the SDK names it,
// with only -c (and -l) before the script (bash -l -c SCRIPT); otherwise
// cfg's words, each quoted, so that a program named by a path
// (/workspace/bin/bash -c ls) is checked as that path and a shell's
// other options (-i, --rcfile) as /v1 checks them. login reports a
// login shell's script (-l), which reads startup files from HOME, the
// workspace: withoutProfiles.
func checkedCommand(cfg *process.ProcessConfig, env map[string]string) (check string, login bool) {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if shellName.MatchString(k) {
			b.WriteString(k + "= ")
		}
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	if script, login, ok := shellScript(cfg); ok {
		return b.String() + script, login
	}
	words := []string{shellQuote(cfg.GetCmd())}
	for _, a := range cfg.GetArgs() {
		words = append(words, shellQuote(a))
	}
	return b.String() + strings.Join(words, " "), false
}

// systemShells are the shells a script's check may stand for: found
// through the sandbox's PATH (which an allowlisted command may not set),
// or at their system paths.
var systemShells = map[string]bool{"sh": true, "bash": true, "/bin/sh": true, "/bin/bash": true, "/usr/bin/sh": true, "/usr/bin/bash": true}

// shellScript returns the script of cfg when it is a system shell given
// only -c SCRIPT, optionally after -l or --login (the SDK's commands.run
// is /bin/bash -l -c SCRIPT); arguments after the script are its $0, $1, ….
func shellScript(cfg *process.ProcessConfig) (script string, login, ok bool) {
	args := cfg.GetArgs()
	if !systemShells[cfg.GetCmd()] {
		return "", false, false
	}
	if len(args) > 0 && (args[0] == "-l" || args[0] == "--login") {
		login, args = true, args[1:]
	}
	if len(args) < 2 || args[0] != "-c" {
		return "", false, false
	}
	return args[1], login, true
}

// withoutProfiles returns cfg, a login shell's script (shellScript), as
// one that reads no startup files: bash --noprofile -l, sh without -l.
func withoutProfiles(cfg *process.ProcessConfig) *process.ProcessConfig {
	out := proto.Clone(cfg).(*process.ProcessConfig)
	if path.Base(cfg.GetCmd()) == "bash" {
		out.Args = append([]string{"--noprofile"}, cfg.GetArgs()...)
	} else {
		out.Args = cfg.GetArgs()[1:]
	}
	return out
}

func isShell(cmd string) bool {
	switch cmd[strings.LastIndexByte(cmd, '/')+1:] {
	case "sh", "bash", "dash", "zsh":
		return true
	}
	return false
}

// shellQuote returns s as one single-quoted /bin/sh word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cwdOf is where the process starts: its cwd, relative ones under
// UserHome, UserHome's in the workspace; none means the sidecar's
// default, the workspace.
func cwdOf(cfg *process.ProcessConfig) string {
	if cfg.Cwd == nil || *cfg.Cwd == "" {
		return ""
	}
	return inSandbox(absPath(*cfg.Cwd))
}
