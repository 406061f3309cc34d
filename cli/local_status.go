package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

// serverStatus is the JSON shape of `boxkite status`.
type serverStatus struct {
	Context string `json:"context"` // the context chosen: local, hosted or an added one
	// URLSource and KeySource say where the URL and the key come from:
	// "file PATH" (the context's), "env BOXKITE_URL", "flag --url",
	// "default". Either from the environment or a flag means the context
	// is not (wholly) what is used, as gh says of GH_HOST and GH_TOKEN.
	URLSource       string `json:"url_source"`
	KeySource       string `json:"key_source"`
	Mode            string `json:"mode"` // local (a server on this machine) or hosted
	URL             string `json:"url"`
	PID             int    `json:"pid,omitempty"` // local mode, when running
	Running         bool   `json:"running"`       // local: the process exists; hosted: the server answered
	Ready           bool   `json:"ready"`
	Error           string `json:"error,omitempty"` // why it is not ready
	ActiveSandboxes *int   `json:"active_sandboxes,omitempty"`
	// Bastion is boxkite-bastion's "host:port" when one is running (local)
	// or configured (hosted); BastionPID is the local one's process.
	Bastion    string `json:"bastion,omitempty"`
	BastionPID int    `json:"bastion_pid,omitempty"`
	// Host is GET /v1/host: disk against the watermark, host limits, the
	// audit log's state, the active sandboxes' disks (admin keys).
	Host *api.HostStatus `json:"host,omitempty"`
}

func newStatusCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the server and bastion, whether they are ready, and how many sandboxes are active",
		Example: `  boxkite status
  boxkite status --json --jq .ready
  boxkite --context staging status`,
		Long: `Show the context in use ('boxkite context ls'), its server (the URL, and for
the local stack its process), the bastion's address for ssh, whether the
server is ready and how many sandboxes are active. When BOXKITE_URL or
BOXKITE_API_KEY (or --url, --api-key) override the context's URL or key,
the context line says so, as does the TUI's title. Exits 1 when the server
is not ready, so scripts can ask it.`,
		GroupID: groupLocal,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			st, err := collectStatus(cmd.Context(), app)
			if err != nil {
				return err
			}
			if asJSON {
				err = out.write(app.IO, st)
			} else {
				err = writeStatus(app, st)
			}
			if err == nil && !st.Ready {
				// Scripts ask `boxkite status` whether the server is up.
				return &exitStatus{code: exitError}
			}
			return err
		},
	}
	out.register(cmd, serverStatus{})
	return cmd
}

func collectStatus(ctx context.Context, app *App) (serverStatus, error) {
	cfg, err := app.Config()
	if err != nil {
		return serverStatus{}, err
	}
	c, err := app.Client()
	if err != nil {
		return serverStatus{}, err
	}
	st := serverStatus{
		Context: cfg.Context, Mode: "hosted", URL: cfg.BaseURL,
		URLSource: cfg.Sources[keyBaseURL], KeySource: cfg.Sources[keyAPIKey],
	}
	if cfg.Local {
		st.Mode = "local"
	}
	if cfg.Context == contextLocal && cfg.localStack() {
		// The stack up starts: its processes are this machine's to show.
		p := pathsFor(cfg.Home)
		pid, err := runningServer(p)
		if err != nil {
			return st, err
		}
		st.PID, st.Running = pid, pid != 0
		if bpid, err := runningBastion(p); err == nil && bpid != 0 && cfg.Bastion != "" {
			st.Bastion, st.BastionPID = cfg.Bastion, bpid
		}
	} else {
		st.Bastion = cfg.Bastion
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The host's disk and limits, and why the server is not ready if
	// its audit log is the reason, also when it is not.
	addHostStatus(ctx, c, &st)
	if err := c.Ready(ctx); err != nil {
		st.Error = message(err)
		return st, nil
	}
	st.Running, st.Ready = true, true
	sbs, err := c.ListSandboxes(ctx, true)
	if err != nil {
		st.Error = "list sandboxes: " + message(err)
		return st, nil
	}
	n := len(sbs)
	st.ActiveSandboxes = &n
	return st, nil
}

func writeStatus(app *App, st serverStatus) error {
	tw := newTable(app.IO.Out)
	fmt.Fprintf(tw, "context:\t%s\n", contextLabel(st.Context, st.URLSource, st.KeySource))
	fmt.Fprintf(tw, "mode:\t%s\n", st.Mode)
	fmt.Fprintf(tw, "url:\t%s\n", st.URL)
	if st.localStack() {
		server := "not running"
		if st.PID != 0 {
			server = fmt.Sprintf("running (pid %d)", st.PID)
		}
		fmt.Fprintf(tw, "server:\t%s\n", server)
		bastion := "not running"
		if st.BastionPID != 0 {
			bastion = fmt.Sprintf("%s (pid %d)", st.Bastion, st.BastionPID)
		}
		fmt.Fprintf(tw, "bastion:\t%s\n", bastion)
	} else if st.Bastion != "" {
		fmt.Fprintf(tw, "bastion:\t%s\n", st.Bastion)
	}
	ready := "yes"
	if !st.Ready {
		ready = "no"
		if st.Error != "" {
			ready += " (" + st.Error + ")"
		}
	}
	fmt.Fprintf(tw, "ready:\t%s\n", ready)
	if st.ActiveSandboxes != nil {
		fmt.Fprintf(tw, "sandboxes:\t%d active\n", *st.ActiveSandboxes)
	}
	if st.Host != nil {
		writeHostStatus(tw, st.Host)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.Host != nil {
		if err := writeSandboxDisks(app.IO.Out, st.Host); err != nil {
			return err
		}
	}
	if st.localStack() && !st.Ready && st.PID == 0 {
		fmt.Fprintln(app.IO.ErrOut, "hint: run 'boxkite up' to start the local server")
	}
	return nil
}

// localStack reports whether the status is of the stack 'boxkite up'
// runs, not of a server BOXKITE_URL or --url names instead.
func (st serverStatus) localStack() bool {
	_, over := overriddenBy(st.URLSource)
	return st.Mode == "local" && st.Context == contextLocal && !over
}

// contextLabel names the context as status and the TUI show it: with the
// environment variables or flags that override its URL or key, so that
// BOXKITE_URL pointing elsewhere does not read as the context in use.
func contextLabel(name, urlSource, keySource string) string {
	var over []string
	for _, o := range []struct{ what, src string }{{"url", urlSource}, {"key", keySource}} {
		if v, ok := overriddenBy(o.src); ok {
			over = append(over, o.what+" from "+v)
		}
	}
	switch len(over) {
	case 0:
		return name
	case 2:
		return name + " (not in use: " + strings.Join(over, ", ") + ")"
	}
	return name + " (" + over[0] + ")"
}

// overriddenBy reports the variable or flag a configuration source names
// when it is one ("env BOXKITE_URL" → BOXKITE_URL, "flag --url" → --url).
func overriddenBy(src string) (string, bool) {
	if v, ok := strings.CutPrefix(src, "env "); ok {
		return v, true
	}
	return strings.CutPrefix(src, "flag ")
}
