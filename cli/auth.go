package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// defaultKeyName names the API key signup and login create.
const defaultKeyName = "boxkite-cli"

// credentialFlags are the flags of signup and login.
type credentialFlags struct {
	email    string
	password string
	keyName  string
}

func (f *credentialFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.email, "email", "", "account `email` (prompted for on a terminal)")
	fl.StringVar(&f.password, "password", "", "`password` (prompted for without echo on a terminal, else read from stdin's first line)")
	fl.StringVar(&f.keyName, "key-name", defaultKeyName, "`name` of the API key created for this machine")
}

func newSignupCmd(app *App) *cobra.Command {
	var f credentialFlags
	cmd := &cobra.Command{
		Use:   "signup [--email EMAIL]",
		Short: "Create an account and save an API key for it in config.toml",
		Long: `Create an account on the server (--url, BOXKITE_URL, or the configured one),
then create an admin API key for this machine and save the URL and the key in
config.toml, where every later command finds them.`,
		Example: "  boxkite signup --url https://boxkite.example.com --email you@example.com\n" +
			"  printf '%s\\n' \"$PASSWORD\" | boxkite signup --email you@example.com",
		GroupID: groupSettings,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCredentials(cmd, app, f, true)
		},
	}
	f.register(cmd)
	return cmd
}

func newLoginCmd(app *App) *cobra.Command {
	var f credentialFlags
	cmd := &cobra.Command{
		Use:   "login [--email EMAIL]",
		Short: "Log in and save a new API key in config.toml",
		Long: `Log in to the server (--url, BOXKITE_URL, or the configured one) with your
email and password, create a new admin API key for this machine, and save the
URL and the key in config.toml. 'boxkite logout' revokes the key again.
With --context NAME (or after 'boxkite context use NAME') they go to that
context's file instead.`,
		Example: "  boxkite login --email you@example.com",
		GroupID: groupSettings,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCredentials(cmd, app, f, false)
		},
	}
	f.register(cmd)
	return cmd
}

// runCredentials signs up or logs in, trades the access token for an API
// key and saves it.
func runCredentials(cmd *cobra.Command, app *App, f credentialFlags, signup bool) error {
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	if strings.HasPrefix(cfg.BaseURL, "http://") && !isLoopbackURL(cfg.BaseURL) {
		// A password must not cross a network in the clear.
		return usageErrorf("use https://, or http:// only for localhost", "refusing to send a password over plain http to %s", cfg.BaseURL)
	}
	if strings.TrimSpace(f.keyName) == "" {
		return usageErrorf(helpHint(cmd), "--key-name must not be empty")
	}
	in := bufio.NewReader(app.IO.In)
	email, err := promptLine(app, in, f.email, "Email: ", "--email")
	if err != nil {
		return err
	}
	password, err := readPassword(app, in, f.password, signup)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	anon := &client.Client{BaseURL: cfg.BaseURL, UserAgent: "boxkite-cli/" + app.Version}
	var tok *api.TokenResponse
	if signup {
		tok, err = anon.Signup(ctx, email, password)
	} else {
		tok, err = anon.Login(ctx, email, password)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", map[bool]string{true: "sign up", false: "log in"}[signup], err)
	}
	authed := &client.Client{BaseURL: cfg.BaseURL, APIKey: tok.AccessToken, UserAgent: anon.UserAgent}
	key, err := authed.CreateAPIKey(ctx, api.CreateAPIKeyRequest{Name: f.keyName, Role: api.RoleAdmin})
	if err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	path, name, err := credentialsFile(app)
	if err != nil {
		return err
	}
	if err := updateFileConfig(path, func(fc *fileConfig) {
		fc.BaseURL, fc.APIKey = cfg.BaseURL, key.Key
	}); err != nil {
		return fmt.Errorf("save api key: %w", err)
	}
	verb := "logged in"
	if signup {
		verb = "signed up"
	}
	fmt.Fprintf(app.IO.ErrOut, "%s as %s; API key %s (%s) saved in %s\n", verb, tok.Account.Email, key.Name, key.Prefix+"…", path)
	noteContextUnused(app, name)
	return nil
}

// promptLine returns value, or asks for it on a terminal.
func promptLine(app *App, in *bufio.Reader, value, prompt, flag string) (string, error) {
	if value != "" {
		return strings.TrimSpace(value), nil
	}
	if !app.IO.InTTY {
		return "", usageErrorf("pass "+flag, "%s is required when stdin is not a terminal", flag)
	}
	fmt.Fprint(app.IO.ErrOut, prompt)
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("read %s: %w", flag, err)
	}
	return strings.TrimSpace(line), nil
}

// readPassword returns the --password value, else prompts for it without
// echo on a terminal (twice when confirm is set), else reads the first
// line of stdin, which keeps it out of argv and shell history.
func readPassword(app *App, in *bufio.Reader, value string, confirm bool) (string, error) {
	if value != "" {
		return value, nil
	}
	f, ok := app.IO.In.(*os.File)
	if !app.IO.InTTY || !ok {
		line, err := in.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read password: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return "", usageErrorf("pass --password, or the password on stdin", "no password given")
		}
		return line, nil
	}
	ask := func(prompt string) (string, error) {
		fmt.Fprint(app.IO.ErrOut, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(app.IO.ErrOut)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		return string(b), nil
	}
	pw, err := ask("Password: ")
	if err != nil {
		return "", err
	}
	if confirm {
		again, err := ask("Password again: ")
		if err != nil {
			return "", err
		}
		if again != pw {
			return "", usageErrorf("type the same password twice", "the passwords do not match")
		}
	}
	return pw, nil
}

func newLogoutCmd(app *App) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use: "logout",
		Example: `  boxkite logout
  boxkite logout --keep-key`,
		Short: "Remove the API key from config.toml and revoke it on the server",
		Long: `Remove the API key from config.toml and revoke it on the server, so a copy of
it stops working too (--keep-key only removes it here). The URL stays, for the
next 'boxkite login'. Local mode (local.toml) is used again afterwards when
the local server is set up. With --context NAME it is that context's key.`,
		GroupID: groupSettings,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _, err := credentialsFile(app)
			if err != nil {
				return err
			}
			fc, err := readFileConfig(path)
			if err != nil {
				return err
			}
			if fc.APIKey == "" {
				fmt.Fprintf(app.IO.ErrOut, "not logged in: %s has no API key\n", path)
				return nil
			}
			revoked := false
			if !keep && fc.BaseURL != "" {
				if err := revokeOwnKey(cmd.Context(), app, fc); err != nil {
					fmt.Fprintf(app.IO.ErrOut, "warning: could not revoke the key on the server: %v\n", message(err))
				} else {
					revoked = true
				}
			}
			if err := updateFileConfig(path, func(fc *fileConfig) { fc.APIKey = "" }); err != nil {
				return fmt.Errorf("remove api key: %w", err)
			}
			what := "API key removed from " + path
			if revoked {
				what += " and revoked"
			}
			fmt.Fprintln(app.IO.ErrOut, what)
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep-key", false, "remove the key from config.toml only; do not revoke it")
	return cmd
}

// revokeOwnKey revokes the key of fc with itself: GET /v1/account names
// the key in use. A key the server no longer knows counts as revoked.
func revokeOwnKey(ctx context.Context, app *App, fc fileConfig) error {
	c := &client.Client{BaseURL: fc.BaseURL, APIKey: fc.APIKey, UserAgent: "boxkite-cli/" + app.Version}
	acct, err := c.Account(ctx)
	if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeInvalidAPIKey {
		return nil
	}
	if err != nil {
		return err
	}
	if acct.APIKey == nil {
		return errors.New("the server did not name the key in use")
	}
	return c.RevokeAPIKey(ctx, acct.APIKey.ID)
}

// whoami is the JSON shape of `whoami --json`.
type whoami struct {
	Account *api.Account `json:"account"`
	Usage   *api.Usage   `json:"usage"`
}

func newWhoamiCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the account, the API key in use and this month's usage",
		Example: `  boxkite whoami
  boxkite whoami --json usage`,
		GroupID: groupSettings,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			acct, err := c.Account(cmd.Context())
			if err != nil {
				return fmt.Errorf("get account: %w", err)
			}
			usage, err := c.Usage(cmd.Context())
			if err != nil {
				return fmt.Errorf("get usage: %w", err)
			}
			if asJSON {
				return out.write(app.IO, whoami{Account: acct, Usage: usage})
			}
			return writeWhoami(app.IO.Out, acct, usage)
		},
	}
	out.register(cmd, whoami{})
	return cmd
}

func writeWhoami(w io.Writer, acct *api.Account, u *api.Usage) error {
	tw := newTable(w)
	if o := acct.Organization; o != nil {
		fmt.Fprintf(tw, "organization:\t%s (%s, you are %s)\n", o.Name, acct.ID, o.Role)
		fmt.Fprintf(tw, "member:\t%s\n", o.MemberID)
	} else {
		fmt.Fprintf(tw, "email:\t%s\n", acct.Email)
		fmt.Fprintf(tw, "account:\t%s\n", acct.ID)
	}
	if k := acct.APIKey; k != nil {
		fmt.Fprintf(tw, "key:\t%s (%s, %s…)\n", k.Name, k.Role, k.Prefix)
	}
	hours := fmt.Sprintf("%g sandbox-hours this month", u.MonthlySandboxHoursUsed)
	if l := u.MonthlySandboxHoursLimit; l != nil {
		hours = fmt.Sprintf("%g/%g sandbox-hours this month", u.MonthlySandboxHoursUsed, *l)
	}
	fmt.Fprintf(tw, "usage:\t%s\n", hours)
	running := fmt.Sprintf("%d (no limit)", u.ConcurrentSandboxes)
	if l := u.ConcurrentSandboxesLimit; l != nil {
		running = fmt.Sprintf("%d/%d", u.ConcurrentSandboxes, *l)
	}
	fmt.Fprintf(tw, "concurrent sandboxes:\t%s\n", running)
	fmt.Fprintf(tw, "output scrubbing:\t%s\n", onOff(acct.ScrubOutput))
	return tw.Flush()
}
