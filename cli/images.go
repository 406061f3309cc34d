package cli

import (
	"cmp"
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

// importTimeout bounds uploading an image archive.
const importTimeout = 30 * time.Minute

func newImagesCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "images",
		Aliases: []string{"image"},
		Short:   "Build, import, list and remove sandbox images",
		Long: `Sandbox images are root filesystems sandboxes boot from
(boxkite session create --image ID). Import one from an OCI or docker save
archive, or build one from the host's system plus packages. Commands take
an image's id, a unique prefix of it, or its label.`,
		GroupID: groupSandboxes,
	})
	ids := completeImages(app)
	cmd.AddCommand(newImagesBuildCmd(app), newImagesImportCmd(app), newImagesLsCmd(app),
		withArgs(withExample(newDetailCmd(app, "image", "Show one image"+refsNote, byRef(imageID, (*client.Client).GetImage), writeImageDetail),
			"  boxkite images get data\n  boxkite images get data --jq .status"), ids),
		withArgs(newImagesLogsCmd(app), ids), withArgs(newImagesAuditCmd(app), ids),
		withArgs(withExample(newRmCmd(app, "image", "Remove an image no sandbox boots from", true, imageID, (*client.Client).DeleteImage),
			"  boxkite images rm data\n  boxkite images rm data --yes"), ids))
	return cmd
}

// writeImageDetail is `images get`'s text view of im: what it is, what a
// build asked for, and why a failed one failed, with its hint.
func writeImageDetail(w io.Writer, im *api.Image, now time.Time) error {
	tw := newTable(w)
	tw.Detail("id", im.ID)
	tw.Detail("status", im.Status)
	tw.Detail("label", im.Label)
	tw.Detail("source", im.Source)
	if s := im.Spec; s != nil {
		tw.Detail("base", cmp.Or(s.Base, "boxkite-default")) // the host's system, as build says
		tw.Detail("apt packages", strings.Join(s.AptPackages, " "))
		tw.Detail("python packages", strings.Join(s.PythonPackages, " "))
		tw.Detail("npm packages", strings.Join(s.NPMPackages, " "))
	}
	if im.SizeBytes > 0 {
		tw.Detail("size", humanBytes(im.SizeBytes))
	}
	tw.Detail("created", stamp(im.CreatedAt, now, " ago"))
	if im.CompletedAt != nil {
		tw.Detail("completed", stamp(*im.CompletedAt, now, " ago"))
	}
	tw.Detail("failure", im.FailureReason)
	tw.Detail("code", im.FailureCode)
	tw.Detail("hint", im.FailureHint)
	return tw.Flush()
}

func newImagesBuildCmd(app *App) *cobra.Command {
	var (
		req  api.CreateImageRequest
		wait bool
		out  outputFlags
	)
	cmd := &cobra.Command{
		Use:   "build [--apt-package NAME[=VERSION]]... [--python-package NAME==VERSION]... [--npm-package NAME==VERSION]...",
		Short: "Build an image: the host's system plus packages",
		Example: "  boxkite images build --apt-package jq --wait\n" +
			"  id=$(boxkite images build --label data --python-package pandas==2.2.3)",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLabel("--label", req.Label); err != nil {
				return err
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			img, err := c.CreateImage(cmd.Context(), req)
			if err != nil {
				return fmt.Errorf("build image: %w", err)
			}
			return finishImage(cmd.Context(), app, c, img, wait, jsonOut(asJSON, &out))
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Label, "label", "", "a `label` for the image")
	f.StringVar(&req.Base, "base", "", "`base` image (default boxkite-default: the host's system)")
	f.StringArrayVar(&req.AptPackages, "apt-package", nil, "apt `package` to install, optionally pinned name=version (repeatable)")
	f.StringArrayVar(&req.PythonPackages, "python-package", nil, "pip `package`, pinned as name==version (repeatable; from the index pip is configured with; wheels only)")
	f.StringArrayVar(&req.NPMPackages, "npm-package", nil, "npm `package`, pinned as name==version or @scope/name==version (repeatable; install scripts run, in the build's jail)")
	f.BoolVar(&wait, "wait", false, "wait until the image is completed or failed (exit 1 if it failed, --json too)")
	out.register(cmd, api.Image{})
	return cmd
}

func newImagesImportCmd(app *App) *cobra.Command {
	var (
		label string
		wait  bool
		out   outputFlags
	)
	cmd := &cobra.Command{
		Use:     "import FILE.tar",
		Short:   "Import an OCI image layout tar or a docker save archive",
		Example: "  docker save python:3.12-slim > py.tar && boxkite images import py.tar --wait",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLabel("--label", label); err != nil {
				return err
			}
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return &hintError{err: fmt.Errorf("import image: %w", err), hint: "give the path of an image archive, e.g. from 'docker save IMAGE > img.tar'"}
			}
			defer f.Close()
			c, err := app.Client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), importTimeout)
			defer cancel()
			img, err := c.ImportImage(ctx, label, f)
			if err != nil {
				return withHint(fmt.Errorf("import image: %w", err), importHint)
			}
			return finishImage(cmd.Context(), app, c, img, wait, jsonOut(asJSON, &out))
		},
	}
	cmd.Flags().StringVar(&label, "label", "", "a `label` for the image")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the image is completed or failed (exit 1 if it failed, --json too)")
	out.register(cmd, api.Image{})
	return cmd
}

// finishImage optionally waits for img to settle, then prints it: its id
// on stdout (for scripts), or JSON; a failed image is an error (exit 1).
func finishImage(ctx context.Context, app *App, c *client.Client, img *api.Image, wait bool, out *outputFlags) error {
	if wait && app.IO.ErrTTY && img.Source == api.ImageSourceBuild {
		// Progress for a person: the build's own log, as it happens.
		if err := c.ImageLogs(ctx, img.ID, true, app.IO.ErrOut); err != nil {
			return fmt.Errorf("follow build log: %w", err)
		}
	}
	if wait {
		var err error
		if img, err = waitImage(ctx, app.IO.ErrOut, c, img); err != nil {
			return err
		}
	}
	// A failed image exits 1 whatever the output: --json prints it first.
	if out != nil {
		if err := out.write(app.IO, img); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(app.IO.Out, img.ID)
	}
	if img.Status == api.ImageFailed {
		hint := img.FailureHint
		switch {
		case hint != "":
		case img.Source == api.ImageSourceBuild:
			hint = "see its log: `boxkite images logs " + img.ID + "`"
		default:
			hint = importHint
		}
		code := ""
		if img.FailureCode != "" {
			code = " (" + img.FailureCode + ")"
		}
		return &hintError{err: fmt.Errorf("image %s failed%s: %s", img.ID, code, img.FailureReason), hint: hint}
	}
	return nil
}

// importHint is what an import that failed gets told.
const importHint = "import takes an OCI image layout tar or a 'docker save' archive (.tar or .tar.gz), e.g. 'docker save python:3.12-slim > py.tar'"

// withHint gives err hint unless it has one of its own (the server's).
func withHint(err error, hint string) error {
	if hintOf(err, nil) != "" {
		return err
	}
	return &hintError{err: err, hint: hint}
}

// waitImage polls img until it is completed or failed, reporting each
// status change on progress.
func waitImage(ctx context.Context, progress io.Writer, c *client.Client, img *api.Image) (*api.Image, error) {
	last := ""
	for {
		if img.Status != last {
			fmt.Fprintf(progress, "image %s: %s\n", img.ID, img.Status)
			last = img.Status
		}
		if img.Status == api.ImageCompleted || img.Status == api.ImageFailed {
			return img, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for image: %w", ctx.Err())
		case <-time.After(time.Second):
		}
		next, err := c.GetImage(ctx, img.ID)
		if err != nil {
			return nil, fmt.Errorf("wait for image: %w", err)
		}
		img = next
	}
}

func newImagesLsCmd(app *App) *cobra.Command {
	return newListCmd(app, listing[api.Image]{
		example: "  boxkite images ls\n  boxkite images ls --limit 100\n  boxkite images ls --jq '.[] | select(.status == \"failed\") | .id'",
		short:   "List the account's images", noun: "images",
		header: "ID\tLABEL\tSOURCE\tSTATUS\tSIZE\tAGE",
		empty:  "no images; build one with 'boxkite images build --apt-package NAME' or import one with 'boxkite images import FILE.tar'",
		fetch:  (*client.Client).ListImages,
		page:   (*client.Client).ListImagePage,
		row: func(im api.Image, now time.Time) []string {
			size := "-"
			if im.SizeBytes > 0 {
				size = fmt.Sprintf("%.1f MiB", float64(im.SizeBytes)/(1<<20))
			}
			return []string{im.ID, im.Label, im.Source, imageStatus(im), size, tui.ShortDuration(now.Sub(im.CreatedAt))}
		},
	})
}

// imageStatus is an image's STATUS cell: a failed one's code follows, as
// 'images build --wait' says it ("failed (image_import_bad_archive)"), so
// the list tells a refused build from a bad archive; 'images get' has the
// reason and the hint.
func imageStatus(im api.Image) string {
	if im.Status == api.ImageFailed && im.FailureCode != "" {
		return im.Status + " (" + im.FailureCode + ")"
	}
	return im.Status
}

func newImagesLogsCmd(app *App) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use: "logs ID",
		Example: `  boxkite images logs data
  boxkite images logs data --follow`,
		Short: "Print an image's build log (--follow until the build ends)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := app.Client()
			if err != nil {
				return err
			}
			id, err := imageID(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.ImageLogs(cmd.Context(), id, follow, app.IO.Out); err != nil {
				return listHint(cmd, fmt.Errorf("image logs: %w", err))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing until the build ends")
	return cmd
}

func newImagesAuditCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "audit ID",
		Short: "Print the audit log of an image's build",
		Long: `Print the audit log of an image's build, oldest first: every connection
its package managers made (egress_allow) or were refused (egress_deny, with
the reason) and how the build ended (image_build_completed, or
image_build_failed with its code, e.g. image_build_egress_refused or
image_build_write_refused). The build's own output is 'boxkite images logs'.`,
		Example: "  boxkite images audit 3f2a\n  boxkite images audit 3f2a --json | jq '.entries[].operation'",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			id, err := imageID(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			page := &api.LogPage{Entries: []api.LogEntry{}}
			for {
				p, err := c.ImageLog(cmd.Context(), id, api.MaxLogLimit, len(page.Entries))
				if err != nil {
					return listHint(cmd, fmt.Errorf("image audit log: %w", err))
				}
				page.Entries = append(page.Entries, p.Entries...)
				page.Total = p.Total
				if len(p.Entries) == 0 || len(page.Entries) >= p.Total {
					break
				}
			}
			if asJSON {
				return out.write(app.IO, page)
			}
			return writeLogTable(app.IO.Out, page.Entries, app.IO.Color)
		},
	}
	out.register(cmd, api.LogPage{})
	pageable(cmd)
	return cmd
}
