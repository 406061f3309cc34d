package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is the date printed in the man pages. It is fixed so that
// regenerating the pages changes them only when the commands change.
func manDate() time.Time { return time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC) }

// newDocsCmd is the hidden generator behind `go generate ./...` in
// cmd/boxkite: man pages and shell completions from this very tree.
func newDocsCmd() *cobra.Command {
	var manDir, complDir string
	cmd := &cobra.Command{
		Use:    "docs --man DIR --completions DIR",
		Short:  "Generate man pages and shell completions",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if manDir == "" && complDir == "" {
				return usageErrorf(helpHint(cmd), "give --man DIR, --completions DIR or both")
			}
			root := cmd.Root()
			if manDir != "" {
				if err := genMan(root, manDir); err != nil {
					return err
				}
			}
			if complDir != "" {
				return genCompletions(root, complDir)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&manDir, "man", "", "write man pages to `DIR`")
	cmd.Flags().StringVar(&complDir, "completions", "", "write completion scripts to `DIR`")
	return cmd
}

// genMan replaces the man pages in dir/man1 with one page per command, so
// dir works as a MANPATH entry (man boxkite-exec) and each page is titled
// after its command (BOXKITE-EXEC(1)).
func genMan(root *cobra.Command, dir string) error {
	dir = filepath.Join(dir, "man1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// Remove the pages of commands that no longer exist.
	old, err := filepath.Glob(filepath.Join(dir, "boxkite*.1"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("remove stale man page: %w", err)
		}
	}
	date := manDate()
	// No Title: cobra then titles each page with its command path.
	header := &doc.GenManHeader{Section: "1", Date: &date, Source: "boxkite", Manual: "boxkite manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("generate man pages: %w", err)
	}
	return nil
}

func genCompletions(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	var errs []error
	for _, s := range completionShells() {
		f, err := os.Create(filepath.Join(dir, s.file))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, s.gen(root, f), f.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("generate completions: %w", err)
	}
	return nil
}
