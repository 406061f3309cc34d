package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

// serverStatus is the JSON shape of `boxkite status`.
type serverStatus struct {
	Context         string `json:"context"` // the context in use: local, hosted or an added one
	Mode            string `json:"mode"`    // local (a server on this machine) or hosted
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
server is ready and how many sandboxes are active. Exits 1 when the server is
not ready, so scripts can ask it.`,
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
	st := serverStatus{Context: cfg.Context, Mode: "hosted", URL: cfg.BaseURL}
	if cfg.Local {
		st.Mode = "local"
	}
	if cfg.Local && cfg.Context == contextLocal {
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
	fmt.Fprintf(tw, "context:\t%s\n", st.Context)
	fmt.Fprintf(tw, "mode:\t%s\n", st.Mode)
	fmt.Fprintf(tw, "url:\t%s\n", st.URL)
	if st.Mode == "local" && st.Context == contextLocal {
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
	if st.Mode == "local" && st.Context == contextLocal && !st.Ready && st.PID == 0 {
		fmt.Fprintln(app.IO.ErrOut, "hint: run 'boxkite up' to start the local server")
	}
	return nil
}
