package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tui"
	"github.com/spf13/cobra"
)

// maxPublicKeyFile bounds what ssh-keys add reads: a public key is a line.
const maxPublicKeyFile = 64 << 10

func newSSHKeysCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "ssh-keys",
		Aliases: []string{"ssh-key"},
		Short:   "List, add and remove the SSH public keys the bastion accepts",
		GroupID: groupSettings,
	})
	cmd.AddCommand(newSSHKeysLsCmd(app), newSSHKeysAddCmd(app), newSSHKeysRmCmd(app))
	return cmd
}

func newSSHKeysLsCmd(app *App) *cobra.Command {
	return newListCmd(app, listing[api.SSHKey]{
		short: "List the account's SSH public keys", noun: "ssh keys",
		example: "  boxkite ssh-keys ls\n  boxkite ssh-keys ls --json name,fingerprint",
		header:  "ID\tNAME\tFINGERPRINT\tAGE",
		empty:   "no SSH keys; add one with 'boxkite ssh-keys add ~/.ssh/id_ed25519.pub'",
		fetch:   (*client.Client).SSHKeys,
		row: func(k api.SSHKey, now time.Time) []string {
			return []string{k.ID, k.Name, k.Fingerprint, tui.ShortDuration(now.Sub(k.CreatedAt))}
		},
	})
}

func newSSHKeysAddCmd(app *App) *cobra.Command {
	var (
		name string
		out  outputFlags
	)
	cmd := &cobra.Command{
		Use:   "add [--name NAME] FILE",
		Short: "Register an SSH public key (FILE - reads stdin)",
		Long: `Register an SSH public key, in authorized_keys format (the contents of a .pub
file), for the bastion. The name defaults to the key's comment.`,
		Example: "  boxkite ssh-keys add ~/.ssh/id_ed25519.pub\n  ssh-add -L | head -1 | boxkite ssh-keys add --name agent -",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			line, err := readPublicKey(app, args[0])
			if err != nil {
				return err
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			k, err := c.AddSSHKey(cmd.Context(), api.AddSSHKeyRequest{Name: name, PublicKey: line})
			if err != nil {
				return fmt.Errorf("add ssh key: %w", err)
			}
			if asJSON {
				return out.write(app.IO, k)
			}
			fmt.Fprintf(app.IO.ErrOut, "added ssh key %s (%s)\n", k.Name, k.Fingerprint)
			fmt.Fprintln(app.IO.Out, k.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "a `name` for the key (default: its comment)")
	out.register(cmd, api.SSHKey{})
	return cmd
}

// readPublicKey reads the key file, or stdin for "-".
func readPublicKey(app *App, path string) (string, error) {
	var r io.Reader = app.IO.In
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", &hintError{err: fmt.Errorf("read public key: %w", err), hint: "pass a .pub file, e.g. ~/.ssh/id_ed25519.pub"}
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPublicKeyFile+1))
	if err != nil {
		return "", fmt.Errorf("read public key: %w", err)
	}
	if len(b) > maxPublicKeyFile {
		return "", usageErrorf("pass the .pub file, not the private key", "%s is too large to be a public key", path)
	}
	s := strings.TrimSpace(string(b))
	if strings.Contains(s, "PRIVATE KEY") {
		return "", usageErrorf("pass the .pub file next to it", "%s is a private key; it never leaves this machine", path)
	}
	return s, nil
}

func newSSHKeysRmCmd(app *App) *cobra.Command {
	return newRemovalCmd(app, removal[api.SSHKey]{
		use:     "rm ID|NAME|FINGERPRINT",
		aliases: []string{"remove"},
		example: "  boxkite ssh-keys rm agent\n  boxkite ssh-keys rm agent --yes",
		short:   "Remove an SSH public key",
		long:    "Remove an SSH public key. On a terminal it asks first; elsewhere it needs --yes.",
		find:    findSSHKey,
		prompt: func(k api.SSHKey) string {
			return fmt.Sprintf("Remove SSH key %s (%s)? It no longer opens the bastion.", k.ID, k.Name)
		},
		remove: func(ctx context.Context, c *client.Client, k api.SSHKey) error {
			if err := c.RemoveSSHKey(ctx, k.ID); err != nil {
				return fmt.Errorf("remove ssh key: %w", err)
			}
			return nil
		},
		done: func(k api.SSHKey) string { return fmt.Sprintf("removed ssh key %s (%s)", k.ID, k.Name) },
	})
}

// findSSHKey resolves ref to one key: its id or fingerprint, a unique id
// prefix, or a unique name.
func findSSHKey(ctx context.Context, c *client.Client, ref string) (api.SSHKey, error) {
	keys, err := c.SSHKeys(ctx)
	if err != nil {
		return api.SSHKey{}, fmt.Errorf("list ssh keys: %w", err)
	}
	return resolveRef(keys, ref, refKind[api.SSHKey]{
		noun: "ssh key", plural: "keys", listCmd: "boxkite ssh-keys ls",
		id: func(k api.SSHKey) string { return k.ID },
		match: func(k api.SSHKey, ref string) refMatch {
			switch {
			case k.ID == ref || k.Fingerprint == ref:
				return exactMatch
			case k.Name == ref || strings.HasPrefix(k.ID, ref):
				return partialMatch
			}
			return noMatch
		},
	})
}
