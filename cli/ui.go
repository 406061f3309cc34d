package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client/api"
)

// consoleLink is what `boxkite ui` prints: a one-time link that signs a
// browser in to the server's web console (docs/console.md).
type consoleLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// consolePath is where the server serves its web console.
const consolePath = "/ui/"

func newUICmd(app *App) *cobra.Command {
	var out outputFlags
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the web console in your browser, signed in",
		Long: `Open the server's web console (/ui/: sandboxes, their files and live audit
log, the terminal in the browser) signed in as your API key's account.

ui asks the server for a one-time sign-in link (POST /ui/links, with an admin
API key; it works once, within two minutes) and opens it in your browser:
$BROWSER if set, else xdg-open (open on macOS). When standard output is not a
terminal, with --no-browser, or with --json, it only prints the link: paste
it into a browser's address bar (one followed from a web page is refused).
Signing out of the console revokes the key the link minted for the browser.
See docs/console.md.`,
		Example: `  boxkite ui
  boxkite ui --no-browser        # print the link, e.g. to open it elsewhere
  boxkite ui --json              # {"url": …, "expires_at": …}`,
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			link, err := mintConsoleLink(cmd.Context(), app)
			if err != nil {
				return err
			}
			if asJSON {
				return out.write(app.IO, link)
			}
			if noBrowser || !app.IO.OutTTY {
				_, err := fmt.Fprintln(app.IO.Out, link.URL)
				return err
			}
			if err := openBrowser(link.URL); err != nil {
				fmt.Fprintf(app.IO.ErrOut, "could not open a browser (%v); open this link within two minutes:\n", err)
				_, err := fmt.Fprintln(app.IO.Out, link.URL)
				return err
			}
			fmt.Fprintln(app.IO.ErrOut, "opened the web console in your browser")
			return nil
		},
	}
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "print the link instead of opening it")
	out.register(cmd, consoleLink{})
	return cmd
}

// printConsoleURL tells where the web console is (up, on stderr).
func printConsoleURL(app *App, baseURL string) {
	fmt.Fprintf(app.IO.ErrOut, "web console at %s%s ('boxkite ui' opens it signed in)\n", strings.TrimRight(baseURL, "/"), consolePath)
}

// mintConsoleLink asks the server for a one-time sign-in link.
func mintConsoleLink(ctx context.Context, app *App) (consoleLink, error) {
	c, err := app.Client()
	if err != nil {
		return consoleLink{}, err
	}
	resp, err := c.Do(ctx, http.MethodPost, consolePath+"links", nil, nil)
	if err != nil {
		if ae, ok := errors.AsType[*api.Error](err); ok && ae.Status == http.StatusNotFound {
			return consoleLink{}, &hintError{
				err:  errors.New("this server has no web console"),
				hint: "it is off (boxkite-server --console=false) or the server is older than the console",
			}
		}
		return consoleLink{}, fmt.Errorf("mint a console link: %w", err)
	}
	defer resp.Body.Close()
	var got struct {
		Path      string    `json:"path"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&got); err != nil || !strings.HasPrefix(got.Path, consolePath) {
		return consoleLink{}, fmt.Errorf("mint a console link: the server's answer is not a link (%v)", err)
	}
	return consoleLink{URL: strings.TrimRight(c.BaseURL, "/") + got.Path, ExpiresAt: got.ExpiresAt}, nil
}

// openBrowser opens url with $BROWSER, else the desktop's opener, and
// does not wait for the browser.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch b := os.Getenv("BROWSER"); {
	case b != "":
		cmd = exec.Command(b, url)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reap it; a browser may run on
	return nil
}
