package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

func newOrgCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "org",
		Aliases: []string{"orgs", "organization", "organizations"},
		Short:   "Create and join organizations, and switch the context to act for one",
		Long: `An organization is a tenant several people share: its sandboxes, keys,
volumes, secrets, snapshots, webhooks and audit log are its own. Members are
owners, admins or members (docs/organizations.md). 'org switch ORG' makes
every later command of this context act for the organization, with a key of
it issued to you; its role is at most your role there. The org commands
themselves always act with your personal key.`,
		GroupID: groupSettings,
	})
	cmd.AddCommand(
		newOrgCreateCmd(app),
		newOrgLsCmd(app),
		newOrgMembersCmd(app),
		newOrgInviteCmd(app),
		newOrgAcceptCmd(app),
		newOrgLeaveCmd(app),
		newOrgSetRoleCmd(app),
		newOrgRemoveCmd(app),
		newOrgSwitchCmd(app),
	)
	return cmd
}

// personalClient is the client of the context's own key, not of the
// organization it switched to.
func personalClient(app *App) (*client.Client, *Config, error) {
	cfg, err := app.Config()
	if err != nil {
		return nil, nil, err
	}
	return &client.Client{BaseURL: cfg.BaseURL, APIKey: cfg.PersonalKey, UserAgent: "boxkite-cli/" + app.Version}, cfg, nil
}

// personalJSONClient is jsonClient for the organization commands: whether
// to print JSON, and a client with the context's personal key.
func personalJSONClient(cmd *cobra.Command, app *App, out *outputFlags) (bool, *client.Client, *Config, error) {
	asJSON, err := out.wantJSON(cmd)
	if err != nil {
		return false, nil, nil, err
	}
	c, cfg, err := personalClient(app)
	if err != nil {
		return false, nil, nil, err
	}
	return asJSON, c, cfg, nil
}

// resolveOrg finds the organization named by ref (its id or name), or the
// context's current one when ref is "".
func resolveOrg(ctx context.Context, c *client.Client, cfg *Config, ref string) (*api.Organization, error) {
	if ref == "" {
		ref = cfg.Org
	}
	if ref == "" {
		return nil, usageErrorf("name the organization, or choose one with 'boxkite org switch ORG'", "no organization given and none is current")
	}
	orgs, err := c.ListOrganizations(ctx)
	if err != nil {
		return nil, fmt.Errorf("list organizations: %w", err)
	}
	var found []api.Organization
	for _, o := range orgs {
		if o.ID == ref {
			return &o, nil
		}
		if o.Name == ref {
			found = append(found, o)
		}
	}
	switch len(found) {
	case 1:
		return &found[0], nil
	case 0:
		return nil, &notFoundError{err: fmt.Errorf("no organization %q", ref), hint: "'boxkite org ls' lists yours; accept an invite with 'boxkite org accept TOKEN'"}
	}
	return nil, usageErrorf("use the organization's id ('boxkite org ls')", "%d organizations are named %q", len(found), ref)
}

func newOrgCreateCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create an organization; you are its owner",
		Example: "  boxkite org create acme\n  boxkite org switch acme",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkNameArg("NAME", args[0], api.MaxOrgNameLen); err != nil {
				return err
			}
			asJSON, c, _, err := personalJSONClient(cmd, app, &out)
			if err != nil {
				return err
			}
			o, err := c.CreateOrganization(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("create organization: %w", err)
			}
			if asJSON {
				return out.write(app.IO, o)
			}
			fmt.Fprintf(app.IO.Out, "%s\ncreated organization %s; act for it with 'boxkite org switch %s'\n", o.ID, o.Name, switchRef(cmd.Context(), c, o))
			return nil
		},
	}
	out.register(cmd, api.Organization{})
	return cmd
}

func newOrgLsCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use: "ls",
		Example: `  boxkite org ls
  boxkite org ls --json name,role`,
		Aliases: []string{"list"},
		Short:   "List your organizations and your role in each; * marks the current one",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, c, cfg, err := personalJSONClient(cmd, app, &out)
			if err != nil {
				return err
			}
			orgs, err := c.ListOrganizations(cmd.Context())
			if err != nil {
				return fmt.Errorf("list organizations: %w", err)
			}
			if asJSON {
				return out.write(app.IO, orgs)
			}
			if len(orgs) == 0 {
				fmt.Fprintln(app.IO.ErrOut, "no organizations; create one with 'boxkite org create NAME'")
				return nil
			}
			return writeRows(app.IO.Out, app.IO.Color, "CURRENT\tNAME\tID\tROLE\tCREATED", orgs, func(o api.Organization, _ time.Time) []string {
				cur := ""
				if o.ID == cfg.Org {
					cur = "*"
				}
				return []string{cur, o.Name, o.ID, o.Role, o.CreatedAt.Format(time.RFC3339)}
			}, time.Now())
		},
	}
	out.register(cmd, api.Organization{})
	return cmd
}

func newOrgMembersCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use: "members [ORG]",
		Example: `  boxkite org members acme
  boxkite org members acme --json`,
		Short: "List an organization's members (default: the current one)",
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, c, cfg, err := personalJSONClient(cmd, app, &out)
			if err != nil {
				return err
			}
			o, err := resolveOrg(cmd.Context(), c, cfg, firstArg(args))
			if err != nil {
				return err
			}
			ms, err := c.OrganizationMembers(cmd.Context(), o.ID)
			if err != nil {
				return fmt.Errorf("list members: %w", err)
			}
			if asJSON {
				return out.write(app.IO, ms)
			}
			return writeRows(app.IO.Out, app.IO.Color, "ACCOUNT\tEMAIL\tROLE\tJOINED", ms, func(m api.OrganizationMember, _ time.Time) []string {
				return []string{m.AccountID, m.Email, m.Role, m.JoinedAt.Format(time.RFC3339)}
			}, time.Now())
		},
	}
	out.register(cmd, api.OrganizationMember{})
	return cmd
}

// orgRef is how a printed command names an organization: by its name
// when a shell passes that through as one argument unchanged, else by its
// id. Quoting the name inside the quoted command would nest quotes and
// be no easier to copy; a name that starts with '-' would read as a flag.
func orgRef(o *api.Organization) string {
	if shellSafe.MatchString(o.Name) && !strings.HasPrefix(o.Name, "-") {
		return o.Name
	}
	return o.ID
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// roleArg refuses a role that is none of allowed before any request, as a
// usage error naming them: the API's refusal is a 422 whose hint points at
// the OpenAPI document, not at the names. what names the flag or argument.
func roleArg(cmd *cobra.Command, what, role string, allowed ...string) error {
	if slices.Contains(allowed, role) {
		return nil
	}
	return usageErrorf(helpHint(cmd), "unknown %s %q (want %s)", what, role, orList(allowed))
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// orgRoleArg is roleArg with an organization's roles.
func orgRoleArg(cmd *cobra.Command, what, role string) error {
	return roleArg(cmd, what, role, api.OrgRoleOwner, api.OrgRoleAdmin, api.OrgRoleMember)
}

func newOrgInviteCmd(app *App) *cobra.Command {
	var (
		out  outputFlags
		role string
	)
	cmd := &cobra.Command{
		Use:   "invite [ORG] EMAIL",
		Short: "Invite an account's email; prints the single-use token to hand over (valid 7 days)",
		Long: `Invite the account with EMAIL into the organization (default: the current
one). There is no mail: hand the printed token to the invitee, who runs
'boxkite org accept TOKEN' logged in as EMAIL within 7 days. Owners and
admins invite; only owners invite owners.`,
		Example: "  boxkite org invite acme ada@example.com --role admin",
		Args:    usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if role != "" {
				if err := orgRoleArg(cmd, "--role", role); err != nil {
					return err
				}
			}
			asJSON, c, cfg, err := personalJSONClient(cmd, app, &out)
			if err != nil {
				return err
			}
			ref, email := "", args[0]
			if len(args) == 2 {
				ref, email = args[0], args[1]
			}
			o, err := resolveOrg(cmd.Context(), c, cfg, ref)
			if err != nil {
				return err
			}
			inv, err := c.InviteMember(cmd.Context(), o.ID, api.CreateInviteRequest{Email: email, Role: role})
			if err != nil {
				return fmt.Errorf("invite: %w", err)
			}
			if asJSON {
				return out.write(app.IO, inv)
			}
			fmt.Fprintf(app.IO.Out, "%s\ninvited %s to %s as %s until %s\n", inv.Token, inv.Email, o.Name, inv.Role, inv.ExpiresAt.Format(time.RFC3339))
			fmt.Fprintf(app.IO.ErrOut, "the token is shown once: hand it to %s, who runs 'boxkite org accept TOKEN'\n", inv.Email)
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "`ROLE` in the organization: member (default), admin or owner")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{api.OrgRoleMember, api.OrgRoleAdmin, api.OrgRoleOwner}, cobra.ShellCompDirectiveNoFileComp))
	out.register(cmd, api.OrganizationInvite{})
	return cmd
}

func newOrgAcceptCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:     "accept TOKEN",
		Example: `  boxkite org accept "$INVITE_TOKEN"`,
		Short:   "Accept an invite with its token, as the invited email",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, c, _, err := personalJSONClient(cmd, app, &out)
			if err != nil {
				return err
			}
			o, err := c.AcceptInvite(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("accept invite: %w", err)
			}
			if asJSON {
				return out.write(app.IO, o)
			}
			fmt.Fprintf(app.IO.Out, "joined %s (%s) as %s; act for it with 'boxkite org switch %s'\n", o.Name, o.ID, o.Role, switchRef(cmd.Context(), c, o))
			return nil
		},
	}
	out.register(cmd, api.Organization{})
	return cmd
}

func newOrgLeaveCmd(app *App) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use: "leave [ORG]",
		Example: `  boxkite org leave acme
  boxkite org leave acme --yes`,
		Short: "Leave an organization (default: the current one); your keys of it stop at once",
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, cfg, err := personalClient(app)
			if err != nil {
				return err
			}
			o, err := resolveOrg(cmd.Context(), c, cfg, firstArg(args))
			if err != nil {
				return err
			}
			if !yes {
				return usageErrorf("pass --yes to leave "+o.Name, "leaving %s revokes your keys of it", o.Name)
			}
			me, err := c.Account(cmd.Context())
			if err != nil {
				return fmt.Errorf("read your account: %w", err)
			}
			if err := c.RemoveMember(cmd.Context(), o.ID, me.ID); err != nil {
				return fmt.Errorf("leave %s: %w", o.Name, err)
			}
			if cfg.Org == o.ID {
				if err := writeOrg(cfg, "", "", ""); err != nil {
					return err
				}
			}
			fmt.Fprintf(app.IO.ErrOut, "left %s\n", o.Name)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "leave without asking")
	return cmd
}

// writeOrg records in the context's file the organization it acts for
// and the key of it; all "" return it to the personal account.
func writeOrg(cfg *Config, id, name, key string) error {
	if cfg.File == "" {
		return &hintError{
			err:  errors.New("this context has no file to remember the organization in"),
			hint: "log in ('boxkite login') or start the local server ('boxkite up') first",
		}
	}
	return updateFileConfig(cfg.File, func(fc *fileConfig) {
		fc.Org, fc.OrgName, fc.OrgAPIKey = id, name, key
	})
}

func newOrgSwitchCmd(app *App) *cobra.Command {
	var (
		personal bool
		role     string
	)
	cmd := &cobra.Command{
		Use:   "switch ORG | --personal",
		Short: "Act for an organization in this context (or, with --personal, for yourself)",
		Long: `Make every later command of this context act for the organization ORG (its
name or id): the switch issues you a key of the organization, with the
highest role your membership allows (or --role member), and keeps it in the
context's file beside your own key. The TUI and 'boxkite whoami' show the
organization. --personal goes back to your own account.`,
		Example: "  boxkite org switch acme\n  boxkite org switch --personal",
		Args:    usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if role != "" {
				if err := roleArg(cmd, "--role", role, api.RoleAdmin, api.RoleMember); err != nil {
					return err
				}
			}
			c, cfg, err := personalClient(app)
			if err != nil {
				return err
			}
			if personal == (len(args) == 1) {
				return usageErrorf("name an organization, or pass --personal", "org switch needs ORG or --personal")
			}
			if personal {
				if err := writeOrg(cfg, "", "", ""); err != nil {
					return err
				}
				fmt.Fprintf(app.IO.ErrOut, "context %s acts for your personal account\n", cfg.Context)
				return nil
			}
			o, err := resolveOrg(cmd.Context(), c, cfg, args[0])
			if err != nil {
				return err
			}
			host, _ := os.Hostname()
			k, err := c.CreateOrganizationKey(cmd.Context(), o.ID, api.CreateAPIKeyRequest{Name: strings.TrimSpace("boxkite org switch " + host), Role: role})
			if err != nil {
				return fmt.Errorf("issue a key of %s: %w", o.Name, err)
			}
			if err := writeOrg(cfg, o.ID, o.Name, k.Key); err != nil {
				return err
			}
			fmt.Fprintf(app.IO.ErrOut, "context %s acts for organization %s as %s (key %s…)\n", cfg.Context, o.Name, k.Role, k.Prefix)
			return nil
		},
	}
	cmd.Flags().BoolVar(&personal, "personal", false, "act for your personal account again")
	cmd.Flags().StringVar(&role, "role", "", "`ROLE` of the key: admin or member (default: the highest your membership allows)")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{api.RoleAdmin, api.RoleMember}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newOrgSetRoleCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "set-role ORG ACCOUNT|EMAIL ROLE",
		Short: "Change a member's role: owner, admin or member (owners and admins; owners for owners)",
		Long: `Change the role of the member named by ACCOUNT (their account id) or EMAIL in
the organization ORG. Owners and admins may; only an owner makes or unmakes
an owner, and the last owner stays one.

A demotion to member (from owner or admin) takes effect at once, on every
server sharing the database: the member's admin keys of ORG go on as member
keys, and what they held as admin keys ends (open terminals close, watch and
process streams end, takeover tokens they minted are refused); the SSH keys
the member registered in ORG (as an admin) are deleted, with the terminals
they hold through the bastion. Promoting the member back revives none of it.
A promotion or owner to admin ends nothing.`,
		Example: "  boxkite org set-role acme ada@example.com owner\n  boxkite org set-role acme 6f1c…-account-id member",
		Args:    usageArgs(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := orgRoleArg(cmd, "ROLE", args[2]); err != nil {
				return err
			}
			asJSON, c, cfg, err := personalJSONClient(cmd, app, &out)
			if err != nil {
				return err
			}
			o, err := resolveOrg(cmd.Context(), c, cfg, args[0])
			if err != nil {
				return err
			}
			account, err := memberRef(cmd.Context(), c, o, args[1])
			if err != nil {
				return err
			}
			m, err := c.SetMemberRole(cmd.Context(), o.ID, account, args[2])
			if err != nil {
				return fmt.Errorf("set role: %w", err)
			}
			if asJSON {
				return out.write(app.IO, m)
			}
			fmt.Fprintf(app.IO.ErrOut, "%s is %s of %s\n", m.Email, m.Role, o.Name)
			return nil
		},
	}
	out.register(cmd, api.OrganizationMember{})
	return cmd
}

func newOrgRemoveCmd(app *App) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use: "remove ORG ACCOUNT|EMAIL",
		Example: `  boxkite org remove acme ada@example.com
  boxkite org remove acme ada@example.com --yes`,
		Short: "Remove a member; their keys of the organization stop at once",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, cfg, err := personalClient(app)
			if err != nil {
				return err
			}
			o, err := resolveOrg(cmd.Context(), c, cfg, args[0])
			if err != nil {
				return err
			}
			if !yes {
				return usageErrorf("pass --yes to remove them", "removing %s from %s revokes their keys of it", args[1], o.Name)
			}
			account, err := memberRef(cmd.Context(), c, o, args[1])
			if err != nil {
				return err
			}
			if err := c.RemoveMember(cmd.Context(), o.ID, account); err != nil {
				return fmt.Errorf("remove member: %w", err)
			}
			fmt.Fprintf(app.IO.ErrOut, "removed %s from %s\n", args[1], o.Name)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "remove without asking")
	return cmd
}
