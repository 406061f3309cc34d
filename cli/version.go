package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildInfo is the JSON shape of `boxkite version --json`.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// readBuildInfo combines the version given to the App (from the -X
// main.version ldflag or the module version) with what the Go toolchain
// recorded about the build.
func readBuildInfo(version string) buildInfo {
	bi := buildInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				bi.Commit = s.Value
			case "vcs.modified":
				bi.Modified = s.Value == "true"
			}
		}
	}
	return bi
}

func newVersionCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of boxkite",
		GroupID: groupSettings,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			bi := readBuildInfo(app.Version)
			if asJSON {
				return out.write(app.IO, bi)
			}
			fmt.Fprintln(app.IO.Out, versionLine(bi))
			return nil
		},
	}
	out.register(cmd, buildInfo{})
	return cmd
}

// versionLine is what `boxkite version` and `boxkite --version` print.
func versionLine(bi buildInfo) string {
	commit := ""
	if bi.Commit != "" {
		commit = bi.Commit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if bi.Modified {
			commit += "-dirty"
		}
		commit = ", commit " + commit
	}
	return fmt.Sprintf("boxkite %s (%s %s%s)", bi.Version, bi.GoVersion, bi.Platform, commit)
}
