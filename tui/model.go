package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/boxkite/boxkite/client/api"
)

// screen is what the body of the TUI shows.
type screen int

const (
	screenList screen = iota
	screenDetail
	screenLog
	screenExec
	screenCreate
)

// Defaults of Options.
const (
	defaultRefresh = 2 * time.Second
	// apiTimeout bounds one request, so a server that hangs shows up as
	// unreachable instead of freezing a screen.
	apiTimeout = 10 * time.Second
	// recentEntries is how much of the audit log the detail screen shows.
	recentEntries = 8
)

// Options configure New.
type Options struct {
	Source Source
	// Color allows colour; false for NO_COLOR, dumb terminals and tests.
	Color bool
	// Output is where the program draws, for colour detection (default stdout).
	Output io.Writer
	// Now is the clock for ages and expiry (default time.Now).
	Now func() time.Time
	// Location is the time zone of log times (default time.Local).
	Location *time.Location
	// Refresh is how often the sandbox list and detail are re-read (default 2s).
	Refresh time.Duration
	// Context names the control plane (the CLI's context) for the title
	// line; empty shows none.
	Context string
	// Organization names the organization the CLI acts for (`boxkite org
	// switch`), shown in the title beside the context; empty for the
	// personal account.
	Organization string
}

// Model is the whole TUI: a stack of screens over one Source.
type Model struct {
	src     Source
	context string // the CLI's context, named in the title
	org     string // the organization acted for, named in the title
	now     func() time.Time
	loc     *time.Location
	refresh time.Duration
	keys    keyMap
	st      styles
	help    help.Model

	width, height int
	stack         []screen // the screens opened, the current one last
	showHelp      bool

	// host is the host's disk and audit state from the last refresh.
	host *api.HostStatus
	// offline is the error of the last failed refresh; nil while the
	// server answers. The next tick retries: that is the reconnect.
	offline error
	note    string // a transient message in the status line
	noteErr bool
	confirm string // id of the sandbox awaiting "destroy? y/n"
	// Reads in flight: a tick does not start another while one is
	// waiting, so a hanging server does not pile requests up.
	loadingList, loadingDetail bool

	list   listState
	detail detailState
	log    logState
	exec   execState
	create createState
}

// New returns the TUI model over opts.Source, starting at the sandbox list.
func New(opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Refresh <= 0 {
		opts.Refresh = defaultRefresh
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.Output == nil {
		opts.Output = os.Stdout
	}
	m := &Model{
		src:     opts.Source,
		context: opts.Context,
		org:     opts.Organization,
		now:     opts.Now,
		loc:     opts.Location,
		refresh: opts.Refresh,
		keys:    newKeyMap(),
		st:      newStyles(opts.Output, opts.Color),
		help:    help.New(),
		width:   80,
		height:  24,
		stack:   []screen{screenList},
	}
	m.help.Styles = m.st.help
	// Two spaces rather than " • ": the whole bar fits in 80 columns.
	m.help.ShortSeparator = "  "
	m.list = newListState()
	return m
}

// Messages. Those of a stream or a sandbox carry what they belong to, so
// an answer that arrives after the user moved on is dropped.
type (
	tickMsg      struct{}
	sandboxesMsg struct {
		sbs  []api.Sandbox
		more bool // older ended sandboxes were left out
		err  error
		host *api.HostStatus // nil when the server does not say (a member key)
	}
	attachDoneMsg struct {
		id  string
		err error
	}
	destroyedMsg struct {
		id  string
		err error
	}
	pausedMsg struct {
		id      string
		resumed bool // a resume, else a pause
		err     error
	}
)

// Init loads the list and starts the refresh ticker.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.loadSandboxes(), m.tick())
}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.refresh, func(time.Time) tea.Msg { return tickMsg{} })
}

// call runs fn with a bounded context; the Cmds below use it for every request.
func call[T any](fn func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	return fn(ctx)
}

func (m *Model) loadSandboxes() tea.Cmd {
	if m.loadingList {
		return nil
	}
	m.loadingList = true
	src := m.src
	return func() tea.Msg {
		msg := readSandboxes(src)
		if msg.err == nil {
			msg.host, _ = call(src.Host)
		}
		return msg
	}
}

// listPage is how many sandboxes a refresh reads beyond the live ones.
const listPage = 200

// readSandboxes reads what the list shows: every live sandbox (active or
// paused: few, the account's quota bounds them) and the newest listPage
// of all, so that a refresh every 2 s costs the same for an account with
// ten thousand ended sandboxes as for one with ten. A live sandbox older
// than the newest listPage is still listed; the ended ones older than
// them are not (more), and the title says so.
func readSandboxes(src Source) sandboxesMsg {
	live, err := call(func(ctx context.Context) ([]api.Sandbox, error) { return src.ListSandboxes(ctx, true) })
	if err != nil {
		return sandboxesMsg{err: err}
	}
	var msg sandboxesMsg
	var newest []api.Sandbox
	err = callErr(func(ctx context.Context) error {
		var err error
		newest, msg.more, err = src.NewestSandboxes(ctx, listPage)
		return err
	})
	if err != nil {
		return sandboxesMsg{err: err}
	}
	// The page was read after the live list: where both hold a sandbox,
	// the page's copy is the newer (it may have ended meanwhile).
	seen := make(map[string]bool, len(newest))
	msg.sbs = make([]api.Sandbox, 0, len(newest)+len(live))
	for _, sb := range newest {
		seen[sb.ID] = true
		msg.sbs = append(msg.sbs, sb)
	}
	for _, sb := range live {
		if !seen[sb.ID] {
			msg.sbs = append(msg.sbs, sb)
		}
	}
	return msg
}

// callErr is call for a request that answers several values.
func callErr(fn func(ctx context.Context) error) error {
	_, err := call(func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

func (m *Model) current() screen { return m.stack[len(m.stack)-1] }

func (m *Model) push(s screen) { m.stack = append(m.stack, s) }

// back closes the current screen, stopping what it runs.
func (m *Model) back() tea.Cmd {
	if len(m.stack) == 1 {
		return nil
	}
	if m.current() == screenLog {
		m.log.stop()
	}
	m.stack = m.stack[:len(m.stack)-1]
	return nil
}

func (m *Model) setNote(s string, isErr bool) { m.note, m.noteErr = s, isErr }

// Update handles one message. It only changes state and returns Cmds;
// every request runs inside a Cmd.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if msg.Width <= 0 || msg.Height <= 0 {
			// A terminal nobody sized: keep drawing at the size we have
			// (80×24 at first) rather than nothing.
			return m, nil
		}
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.layout()
		return m, nil
	case tickMsg:
		cmds := []tea.Cmd{m.loadSandboxes(), m.tick()}
		if m.inStack(screenDetail) && !m.loadingDetail {
			cmds = append(cmds, m.loadDetail(m.detail.id))
		}
		return m, tea.Batch(cmds...)
	case sandboxesMsg:
		m.loadingList = false
		m.offline = msg.err
		if msg.err == nil {
			m.list.set(m.list.keepSelected(msg.sbs, msg.more))
			m.list.more = msg.more
			m.host = msg.host
		}
		return m, nil
	case attachDoneMsg:
		if e, ok := errors.AsType[*ShellExited](msg.err); ok {
			m.setNote(fmt.Sprintf("the shell in %s exited (exit code %d)", msg.id, e.Code), e.Code != 0)
			return m, m.loadSandboxes()
		}
		if msg.err != nil {
			m.setNote("attach: "+errHinted(msg.err), true)
		} else {
			m.setNote("detached from "+msg.id, false)
		}
		return m, m.loadSandboxes()
	case pausedMsg:
		verb := map[bool]string{false: "paused ", true: "resumed "}[msg.resumed]
		if msg.err != nil {
			m.setNote(strings.TrimSpace(verb)+" "+msg.id+": "+errHinted(msg.err), true)
			return m, nil
		}
		m.setNote(verb+msg.id, false)
		if m.current() == screenDetail && m.detail.id == msg.id {
			return m, tea.Batch(m.loadSandboxes(), m.loadDetail(msg.id))
		}
		return m, m.loadSandboxes()
	case destroyedMsg:
		if msg.err != nil {
			m.setNote("destroy "+msg.id+": "+errHinted(msg.err), true)
			return m, nil
		}
		m.setNote("destroyed "+msg.id, false)
		if m.current() == screenDetail && m.detail.id == msg.id {
			m.back()
		}
		return m, m.loadSandboxes()
	case detailMsg:
		m.loadingDetail = false
		m.detail.apply(msg)
		return m, nil
	case logBatchMsg, watchEndMsg, watchRetryMsg:
		return m, m.updateLogStream(msg)
	case execDoneMsg:
		m.exec.done(msg)
		return m, nil
	case createdMsg:
		return m, m.created(msg)
	case tea.KeyMsg:
		return m, m.handleKey(msg)
	}
	// Anything else (cursor blinks) belongs to a focused text input.
	return m, m.updateInputs(msg)
}

func (m *Model) inStack(s screen) bool {
	for _, x := range m.stack {
		if x == s {
			return true
		}
	}
	return false
}

// typing reports whether keys go to a text input, so letters are text
// rather than commands.
func (m *Model) typing() bool {
	switch m.current() {
	case screenList:
		return m.list.filtering
	case screenLog:
		return m.log.searching
	case screenExec, screenCreate:
		return true
	}
	return false
}

func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	if msg.Type == tea.KeyCtrlC {
		m.log.stop()
		return tea.Quit
	}
	if m.confirm != "" {
		return m.handleConfirm(msg)
	}
	if m.showHelp {
		// Any key closes the full help; q still quits.
		m.showHelp = false
		if key.Matches(msg, m.keys.Quit) {
			m.log.stop()
			return tea.Quit
		}
		return nil
	}
	if !m.typing() {
		switch {
		case key.Matches(msg, m.keys.Quit):
			m.log.stop()
			return tea.Quit
		case key.Matches(msg, m.keys.Help):
			m.showHelp = true
			return nil
		}
		m.note = ""
	}
	switch m.current() {
	case screenList:
		return m.listKey(msg)
	case screenDetail:
		return m.detailKey(msg)
	case screenLog:
		return m.logKey(msg)
	case screenExec:
		return m.execKey(msg)
	case screenCreate:
		return m.createKey(msg)
	}
	return nil
}

func (m *Model) handleConfirm(msg tea.KeyMsg) tea.Cmd {
	id := m.confirm
	switch {
	case key.Matches(msg, m.keys.Yes):
		m.confirm = ""
		m.setNote("destroying "+id+"…", false)
		src := m.src
		return func() tea.Msg {
			_, err := call(func(ctx context.Context) (struct{}, error) { return struct{}{}, src.DeleteSandbox(ctx, id) })
			return destroyedMsg{id: id, err: err}
		}
	case key.Matches(msg, m.keys.No):
		m.confirm = ""
	}
	return nil
}

// Actions shared by several screens.

// togglePause pauses an active sandbox (freeze) or resumes a paused one.
func (m *Model) togglePause(sb api.Sandbox) tea.Cmd {
	src, id := m.src, sb.ID
	switch sb.Status {
	case api.StatusActive:
		m.setNote("pausing "+id+"…", false)
		return func() tea.Msg {
			_, err := call(func(ctx context.Context) (*api.Sandbox, error) { return src.PauseSandbox(ctx, id, "") })
			return pausedMsg{id: id, err: err}
		}
	case api.StatusPaused:
		m.setNote("resuming "+id+"…", false)
		return func() tea.Msg {
			_, err := call(func(ctx context.Context) (*api.ResumeResult, error) { return src.ResumeSandbox(ctx, id) })
			return pausedMsg{id: id, resumed: true, err: err}
		}
	}
	return nil
}

func (m *Model) askDestroy(id string) {
	if id != "" {
		m.confirm = id
	}
}

func (m *Model) attach(id string) tea.Cmd {
	if id == "" {
		return nil
	}
	return tea.Exec(m.src.Attach(id), func(err error) tea.Msg { return attachDoneMsg{id: id, err: err} })
}

func (m *Model) updateInputs(msg tea.Msg) tea.Cmd {
	switch m.current() {
	case screenList:
		return m.list.updateInput(msg)
	case screenLog:
		return m.log.updateInput(msg)
	case screenExec:
		return m.exec.updateInput(msg)
	case screenCreate:
		return m.create.updateInput(msg)
	}
	return nil
}

// bodyHeight is what is left for a screen under the title and above the
// status line and help bar.
func (m *Model) bodyHeight() int { return max(m.height-3, 1) }

func (m *Model) layout() {
	m.list.filter.Width = max(m.width-12, 10)
	m.log.search.Width = max(m.width-12, 10)
	m.exec.input.Width = max(m.width-12, 10)
	m.create.setWidth(m.width)
}
