package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tui"
	"github.com/spf13/cobra"
)

// The key commands use the configured API key, which must be an admin
// key: the server lets admin keys manage keys as an access token would,
// so local mode (whose account has no password) can too.

func newKeysCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "keys",
		Aliases: []string{"key", "api-keys"},
		Short:   "List, create and revoke API keys (needs an admin key)",
		GroupID: groupSettings,
	})
	cmd.AddCommand(newKeysLsCmd(app), newKeysCreateCmd(app), newKeysRmCmd(app))
	return cmd
}

func newKeysLsCmd(app *App) *cobra.Command {
	return newListCmd(app, listing[api.APIKey]{
		example: "  boxkite keys ls\n  boxkite keys ls --jq 'map(select(.role == \"admin\")) | length'",
		short:   "List the account's API keys, expired ones marked so (--all includes revoked ones)", noun: "api keys",
		header: "ID\tNAME\tROLE\tPREFIX\tSTATUS\tAGE\tUSED\tEXPIRES",
		empty:  "no API keys; create one with 'boxkite keys create --name NAME'",
		fetch:  (*client.Client).APIKeys,
		row:    keyRow,
		flags: func(cmd *cobra.Command) func([]api.APIKey) []api.APIKey {
			all := cmd.Flags().BoolP("all", "a", false, "include revoked keys")
			return func(keys []api.APIKey) []api.APIKey {
				shown := []api.APIKey{}
				for _, k := range keys {
					if *all || k.RevokedAt == nil {
						shown = append(shown, k)
					}
				}
				return shown
			}
		},
	})
}

// keyRow is a key's line in keys ls. Whether it has expired is the
// server's word (expired) when it says so, for a client whose clock is
// behind; the times are by the client's clock.
func keyRow(k api.APIKey, now time.Time) []string {
	status, expires := "active", "never"
	if k.ExpiresAt != nil {
		switch left := k.ExpiresAt.Sub(now); {
		case left > 0 && !k.Expired:
			expires = "in " + tui.ShortDuration(left)
		default:
			status, expires = "expired", tui.ShortDuration(max(-left, 0))+" ago"
		}
	}
	if k.RevokedAt != nil {
		status = "revoked"
	}
	used := "never"
	if k.LastUsedAt != nil {
		used = tui.ShortDuration(now.Sub(*k.LastUsedAt)) + " ago"
	}
	return []string{k.ID, k.Name, k.Role, k.Prefix + "…", status, tui.ShortDuration(now.Sub(k.CreatedAt)), used, expires}
}

func newKeysCreateCmd(app *App) *cobra.Command {
	var (
		req     api.CreateAPIKeyRequest
		out     outputFlags
		expires time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create --name NAME [--role admin|member] [--expires DURATION]",
		Short: "Create an API key and print it (it is shown this once)",
		Long: `Create an API key and print it on stdout. The server keeps only its hash:
store it now. Admin keys may do everything; member keys may use sandboxes but
not manage keys or take over a terminal. With --expires the key stops working
that long after it is made (a minute to a year, e.g. 12h, 30d); without, it
works until it is revoked.`,
		Example: "  boxkite keys create --name ci --role member\n  key=$(boxkite keys create --name laptop)\n  boxkite keys create --name pr-42 --expires 12h",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			if strings.TrimSpace(req.Name) == "" {
				return usageErrorf(helpHint(cmd), "--name is required")
			}
			if err := checkNameArg("--name", req.Name, api.MaxKeyNameLen); err != nil {
				return err
			}
			if err := roleArg(cmd, "--role", req.Role, api.RoleAdmin, api.RoleMember); err != nil {
				return err
			}
			if req.ExpiresInSeconds, err = expiresArg(cmd, expires); err != nil {
				return err
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			k, err := c.CreateAPIKey(cmd.Context(), req)
			if err != nil {
				return fmt.Errorf("create api key: %w", err)
			}
			if asJSON {
				return out.write(app.IO, k)
			}
			if k.ExpiresAt != nil {
				fmt.Fprintf(app.IO.ErrOut, "created %s key %s (%s), expiring at %s; it is not shown again\n",
					k.Role, k.Name, k.ID, k.ExpiresAt.UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(app.IO.ErrOut, "created %s key %s (%s); it is not shown again\n", k.Role, k.Name, k.ID)
			}
			fmt.Fprintln(app.IO.Out, k.Key)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Name, "name", "", "a `name` for the key, e.g. where it is used")
	f.StringVar(&req.Role, "role", api.RoleAdmin, "`role`: admin or member")
	f.Var(newDurationValue(&expires, 0, time.Second), "expires", "make the key stop working after this `duration` (1m to 365d, e.g. 12h); default never")
	out.register(cmd, api.APIKeyCreated{})
	cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{api.RoleAdmin, api.RoleMember}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// expiresArg is --expires as expires_in_seconds: nil when not given, a
// usage error outside what the server allows.
func expiresArg(cmd *cobra.Command, d time.Duration) (*int64, error) {
	if !cmd.Flags().Changed("expires") {
		return nil, nil
	}
	secs := int64(wholeUnits(d, time.Second))
	if secs < api.MinKeyExpiresInSeconds || secs > api.MaxKeyExpiresInSeconds {
		typed := compactDuration(d)
		if v, ok := cmd.Flags().Lookup("expires").Value.(*durationValue); ok && v.typed != "" {
			typed = v.typed
		}
		return nil, usageErrorf("use a duration from 1m to 365d, e.g. --expires 12h", "--expires %s is not between a minute and a year", typed)
	}
	return &secs, nil
}

func newKeysRmCmd(app *App) *cobra.Command {
	var force bool
	cmd := newRemovalCmd(app, removal[api.APIKey]{
		use:     "rm ID|NAME",
		aliases: []string{"revoke"},
		example: "  boxkite keys rm ci\n  boxkite keys rm ci --yes",
		short:   "Revoke an API key; it stops working at once",
		long: `Revoke an API key; it stops working at once. The key this CLI itself uses
(in local mode, the one boxkite up keeps in local.toml) is refused without
--force, since revoking it locks the CLI, and up, out. On a terminal it asks
first; elsewhere it needs --yes.`,
		find: findKey,
		check: func(k api.APIKey) error {
			if force {
				return nil
			}
			return refuseOwnKey(app, k)
		},
		prompt: func(k api.APIKey) string {
			return fmt.Sprintf("Revoke API key %s (%s)? It stops working at once.", k.ID, k.Name)
		},
		remove: func(ctx context.Context, c *client.Client, k api.APIKey) error {
			if err := c.RevokeAPIKey(ctx, k.ID); err != nil {
				return fmt.Errorf("revoke api key: %w", err)
			}
			return nil
		},
		done: func(k api.APIKey) string { return fmt.Sprintf("revoked key %s (%s)", k.ID, k.Name) },
	})
	cmd.Flags().BoolVar(&force, "force", false, "revoke it even if it is the key this CLI uses")
	return cmd
}

// refuseOwnKey refuses to revoke the key the CLI is using: the server
// would accept, and every later command (and, in local mode, boxkite up,
// which keeps using the key in local.toml) would fail with 401.
func refuseOwnKey(app *App, k api.APIKey) error {
	cfg, err := app.Config()
	if err != nil || k.Prefix == "" || !strings.HasPrefix(cfg.APIKey, k.Prefix) {
		return nil
	}
	hint := "create and configure another key first ('boxkite keys create', then 'boxkite config set-key'), or pass --force"
	if cfg.File == filepath.Join(cfg.Home, localFile) && cfg.Sources[keyAPIKey] == "file "+cfg.File {
		hint = "it is the key 'boxkite up' wrote to " + cfg.File + " and keeps using; to replace it, create another admin key " +
			"('boxkite keys create'), put it in that file, then revoke this one; --force revokes it anyway"
	}
	return &hintError{err: fmt.Errorf("key %s (%s) is the key this CLI uses; revoking it would lock the CLI out", k.ID, k.Name), hint: hint}
}

// findKey resolves ref to one active key: its id, a unique id prefix, or
// a unique name.
func findKey(ctx context.Context, c *client.Client, ref string) (api.APIKey, error) {
	keys, err := c.APIKeys(ctx)
	if err != nil {
		return api.APIKey{}, fmt.Errorf("list api keys: %w", err)
	}
	active := make([]api.APIKey, 0, len(keys))
	for _, k := range keys {
		if k.RevokedAt == nil {
			active = append(active, k)
		}
	}
	k, err := resolveKeyRef(active, ref)
	if _, notFound := errors.AsType[*notFoundError](err); notFound {
		// Say so when ref names a key that was revoked already, rather
		// than that it does not exist ('keys ls --all' shows it).
		for _, r := range keys {
			if r.RevokedAt != nil && (r.ID == ref || r.Name == ref) {
				return api.APIKey{}, &notFoundError{
					err:  fmt.Errorf("api key %s (%s) was revoked already, at %s", r.ID, r.Name, r.RevokedAt.UTC().Format(time.RFC3339)),
					hint: "'boxkite keys ls' lists the active keys ('--all' the revoked ones too)",
				}
			}
		}
	}
	return k, err
}

// resolveKeyRef resolves ref among keys: an id, a unique id prefix or a
// unique name.
func resolveKeyRef(keys []api.APIKey, ref string) (api.APIKey, error) {
	return resolveRef(keys, ref, refKind[api.APIKey]{
		noun: "api key", plural: "keys", listCmd: "boxkite keys ls",
		id: func(k api.APIKey) string { return k.ID },
		match: func(k api.APIKey, ref string) refMatch {
			switch {
			case k.ID == ref:
				return exactMatch
			case k.Name == ref || strings.HasPrefix(k.ID, ref):
				return partialMatch
			}
			return noMatch
		},
	})
}
