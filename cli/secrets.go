package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tui"
)

func newSecretsCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "secrets",
		Aliases: []string{"secret"},
		Short:   "Set, list and remove secrets the server uses for sandboxes",
		Long: `A secret is a credential agent code uses without seeing it. The server keeps
it encrypted; a sandbox created with --secret NAME may send HTTP requests
through the server (the http_request tool, POST …/http-request) with
{{secret:NAME}} where the value goes, only to the secret's allowed hosts.
The value never enters the sandbox and is redacted from the answers.
See docs/secrets.md.`,
		GroupID: groupSandboxes,
	})
	cmd.AddCommand(newSecretsSetCmd(app), newSecretsLsCmd(app),
		withExample(newRmCmd(app, "secret", "Remove a secret (by name or id); sandboxes granted it can no longer use it", true, nil, (*client.Client).DeleteSecret),
			"  boxkite secrets rm GITHUB_TOKEN\n  boxkite secrets rm GITHUB_TOKEN --yes"))
	return cmd
}

func newSecretsSetCmd(app *App) *cobra.Command {
	var (
		out   outputFlags
		hosts []string
		tier  string
	)
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Create a secret, or replace its value",
		Long: `Create the secret NAME, or replace its value (and, with --allowed-host,
its hosts). The value is read without echo on a terminal, else from stdin
(one trailing newline dropped); never from a flag, which would leave it in
shell history and the process list. Admin keys only.

A new value reaches the sandboxes granted the secret at their next request.
To cut them off instead (the value leaked from one), rm the secret and set
it again: a secret set again under a removed one's name is a new secret,
granted only to sandboxes created with it after.`,
		Example: "  boxkite secrets set GITHUB_TOKEN --allowed-host api.github.com\n" +
			"  printf %s \"$TOKEN\" | boxkite secrets set GITHUB_TOKEN --allowed-host api.github.com\n" +
			"  boxkite session create --secret GITHUB_TOKEN",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The server's rule, checked before the value is asked for.
			if err := api.CheckSecretName(args[0]); err != nil {
				return fmt.Errorf("set secret: %w", err)
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			existing, err := findSecret(cmd, c, args[0])
			if err != nil {
				return err
			}
			if existing == nil && len(hosts) == 0 {
				return usageErrorf("pass --allowed-host HOST (repeatable): the hosts the secret may be sent to", "a new secret needs --allowed-host")
			}
			value, err := readSecretValue(app)
			if err != nil {
				return err
			}
			var s *api.Secret
			if existing == nil {
				s, err = c.CreateSecret(cmd.Context(), api.CreateSecretRequest{Name: args[0], Value: value, AllowedHosts: hosts, TrustTier: tier})
			} else {
				s, err = c.UpdateSecret(cmd.Context(), existing.ID, api.UpdateSecretRequest{Value: value, AllowedHosts: hosts})
			}
			if err != nil {
				return fmt.Errorf("set secret: %w", err)
			}
			if asJSON {
				return out.write(app.IO, s)
			}
			verb := "created"
			if existing != nil {
				verb = "updated"
			}
			fmt.Fprintf(app.IO.ErrOut, "%s secret %s (allowed hosts: %s)\n", verb, s.Name, strings.Join(s.AllowedHosts, ", "))
			fmt.Fprintln(app.IO.Out, s.ID)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&hosts, "allowed-host", nil, "`HOST` the secret may be sent to (repeatable; required for a new secret)")
	cmd.Flags().StringVar(&tier, "trust-tier", "", `trust tier of a new secret: "testnet", or none`)
	out.register(cmd, api.Secret{})
	return cmd
}

// findSecret returns the account's secret named name, or nil.
func findSecret(cmd *cobra.Command, c *client.Client, name string) (*api.Secret, error) {
	ss, err := c.ListSecrets(cmd.Context())
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	for i := range ss {
		if ss[i].Name == name {
			return &ss[i], nil
		}
	}
	return nil, nil
}

// readSecretValue reads a value without echo on a terminal, else all of
// stdin with one trailing newline dropped.
func readSecretValue(app *App) (string, error) {
	if f, ok := app.IO.In.(*os.File); ok && app.IO.InTTY {
		fmt.Fprint(app.IO.ErrOut, "Value: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(app.IO.ErrOut)
		if err != nil {
			return "", fmt.Errorf("read value: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(app.IO.In), api.MaxSecretValueLen+2))
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read value: %w", err)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if v == "" {
		return "", usageErrorf("pipe the value on stdin, or run on a terminal to be asked for it", "no value given")
	}
	return v, nil
}

func newSecretsLsCmd(app *App) *cobra.Command {
	return newListCmd(app, listing[api.Secret]{
		short: "List the account's secrets (never their values)", noun: "secrets",
		example: "  boxkite secrets ls\n  boxkite secrets ls --json name,allowed_hosts,last_used_at",
		header:  "NAME\tALLOWED HOSTS\tLAST USED\tID",
		empty:   "no secrets; set one with 'boxkite secrets set NAME --allowed-host HOST'",
		fetch:   (*client.Client).ListSecrets,
		row: func(s api.Secret, now time.Time) []string {
			used := "never"
			if s.LastUsedAt != nil {
				used = tui.ShortDuration(now.Sub(*s.LastUsedAt)) + " ago"
			}
			return []string{s.Name, strings.Join(s.AllowedHosts, ","), used, s.ID}
		},
	})
}
