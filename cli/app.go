package cli

import (
	"io"
	"os"
	"sync"

	"github.com/boxkite/boxkite/client"
	// Linked for its initialiser: it stops bubbletea's from querying the
	// terminal's background colour when any boxkite command starts.
	_ "github.com/boxkite/boxkite/cli/internal/quietterm"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// IO is where a command reads and writes, and what it knows about the
// terminal. Data goes to Out, chatter (progress, notes) to ErrOut.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	InTTY  bool // In is a terminal: don't read it as piped input
	OutTTY bool // Out is a terminal: tables may use colour
	ErrTTY bool // ErrOut is a terminal: progress may be shown
	Color  bool // colour is allowed on Out (colorAllowed)
}

// Stdio returns the process's standard streams with terminal detection.
func Stdio() IO {
	isTTY := func(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
	s := IO{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		InTTY: isTTY(os.Stdin), OutTTY: isTTY(os.Stdout), ErrTTY: isTTY(os.Stderr),
	}
	s.Color = colorAllowed(s.OutTTY, os.Getenv)
	return s
}

// colorAllowed says whether output may be coloured, as gh decides it:
// https://no-color.org first (any non-empty NO_COLOR: never), then
// CLICOLOR_FORCE set to anything but 0 (always, also piped: for a pager
// or a CI log that shows colour), then CLICOLOR=0 (never), then only on a
// terminal that is not TERM=dumb.
func colorAllowed(outTTY bool, getenv func(string) string) bool {
	switch {
	case getenv("NO_COLOR") != "":
		return false
	case getenv("CLICOLOR_FORCE") != "" && getenv("CLICOLOR_FORCE") != "0":
		return true
	case getenv("CLICOLOR") == "0":
		return false
	}
	return outTTY && getenv("TERM") != "dumb"
}

// App is what every command needs. Costly or fallible members are funcs, so a
// command that never calls the API never reads configuration.
type App struct {
	IO      IO
	Config  func() (*Config, error)        // resolved once: flags > env > file > defaults
	Client  func() (*client.Client, error) // for the resolved base_url and api_key
	Version string

	// flags are the root's persistent flags (--url, --api-key), set by
	// NewRoot; Config reads them after cobra has parsed the command line.
	flags *pflag.FlagSet
}

// NewApp returns an App over stdio whose Config and Client are resolved lazily,
// at most once, from the environment, the files under BOXKITE_HOME and the
// root command's flags.
func NewApp(stdio IO, version string) *App {
	app := &App{IO: stdio, Version: version}
	app.Config = sync.OnceValues(func() (*Config, error) {
		return LoadConfig(app.flags)
	})
	app.Client = sync.OnceValues(func() (*client.Client, error) {
		cfg, err := app.Config()
		if err != nil {
			return nil, err
		}
		return &client.Client{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, UserAgent: "boxkite-cli/" + app.Version}, nil
	})
	return app
}

// configClient is the resolved configuration and its client.
func (app *App) configClient() (*Config, *client.Client, error) {
	cfg, err := app.Config()
	if err != nil {
		return nil, nil, err
	}
	c, err := app.Client()
	if err != nil {
		return nil, nil, err
	}
	return cfg, c, nil
}
