package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// Help groups, in the order `boxkite --help` shows them.
const (
	groupSandboxes = "sandboxes"
	groupLocal     = "local"
	groupSettings  = "settings"
)

// NewRoot builds the whole command tree for app. It is a constructor, not a
// global, so every test (and every invocation) gets a fresh tree.
func NewRoot(app *App) *cobra.Command {
	root := &cobra.Command{
		Use:   "boxkite",
		Short: "Run agent-generated code in disposable sandboxes",
		Long: `boxkite runs commands in isolated sandboxes, on this machine or on a
boxkite server.

  boxkite up                                  start the local server
  boxkite exec -- python3 -c 'print(1+1)'     run a command in a sandbox
  boxkite session ls                          list sandboxes

Configuration comes from flags, then BOXKITE_URL and BOXKITE_API_KEY, then
the current context: local (the server up starts, ~/.boxkite/local.toml),
hosted (~/.boxkite/config.toml, written by login) or one added with
'boxkite context add'. --context or BOXKITE_CONTEXT picks another for one
command; 'boxkite context use' switches. BOXKITE_HOME moves ~/.boxkite.

Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 auth, 5 quota or limit,
124 the command timed out in the sandbox; exec otherwise exits with the
command's own exit code.`,
		Args:              unknownSubcommand,
		PersistentPreRunE: refuseEmptySandbox,
		RunE:              func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SilenceErrors:     true,
		SilenceUsage:      true,
		// unknownSubcommand suggests commands within this edit distance.
		SuggestionsMinimumDistance: 2,
		// Man pages must not change with the day they are generated.
		DisableAutoGenTag: true,
	}
	// --version prints what `boxkite version` does.
	root.Version = app.Version
	root.SetVersionTemplate(versionLine(readBuildInfo(app.Version)) + "\n")
	root.SetIn(app.IO.In)
	root.SetOut(app.IO.Out)
	root.SetErr(app.IO.ErrOut)
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.DisableDefaultCmd = true // ours is in completion.go

	pf := root.PersistentFlags()
	pf.String("url", "", "control-plane `URL` (env BOXKITE_URL; default the current context's, see 'boxkite config show')")
	pf.String("api-key", "", "API `key` (env BOXKITE_API_KEY)")
	pf.String("context", "", "use this context's server and key (env BOXKITE_CONTEXT; see 'boxkite context ls')")
	root.RegisterFlagCompletionFunc("context", completeContexts)
	app.flags = pf

	root.AddGroup(
		&cobra.Group{ID: groupSandboxes, Title: "Sandboxes:"},
		&cobra.Group{ID: groupLocal, Title: "Local server:"},
		&cobra.Group{ID: groupSettings, Title: "Settings and tools:"},
	)
	root.SetHelpCommand(newHelpCmd())
	root.AddCommand(
		newExecCmd(app),
		newFilesCmd(app),
		newPsCmd(app),
		newKillCmd(app),
		newLogsCmd(app),
		newAttachCmd(app),
		newSSHCmd(app),
		newSSHConfigCmd(app),
		newSSHProxyCmd(app),
		newTUICmd(app),
		newUICmd(app),
		newHandoffCmd(app),
		newLogCmd(app),
		newWatchCmd(app),
		newPreviewCmd(app),
		newAuditCmd(app),
		newAllowlistCmd(app),
		newSessionCmd(app),
		newImagesCmd(app),
		newVolumesCmd(app),
		newSnapshotsCmd(app),
		newMCPConnectionsCmd(app),
		newWebhooksCmd(app),
		newAdminCmd(app),
		newOrgCmd(app),
		newSecretsCmd(app),
		newUpCmd(app),
		newDownCmd(app),
		newStatusCmd(app),
		newDoctorCmd(app),
		newConfigCmd(app),
		newContextCmd(app),
		newSignupCmd(app),
		newLoginCmd(app),
		newLogoutCmd(app),
		newWhoamiCmd(app),
		newScrubOutputCmd(app),
		newKeysCmd(app),
		newSSHKeysCmd(app),
		newToolsCmd(),
		newMCPCmd(app),
		newBenchCmd(app),
		newAPICmd(app),
		newVersionCmd(app),
		newCompletionCmd(),
		newDocsCmd(),
		newFormattingHelp(),
	)
	pageMarked(app, root)
	return root
}

// refuseEmptySandbox refuses -s/--sandbox given as "": left as is, it
// would mean "not given", and `boxkite exec -s "$SB" …` with SB unset
// would run in whichever sandbox is the only active one (or, locally, a
// new one).
func refuseEmptySandbox(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags().Lookup("sandbox")
	if f == nil || !f.Changed || strings.TrimSpace(f.Value.String()) != "" {
		return nil
	}
	return usageErrorf("name a sandbox by id, unique id prefix or label ('boxkite session ls'), or leave out -s to use the only active one",
		"-s/--sandbox is empty")
}
