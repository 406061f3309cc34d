package cli

import (
	"context"
	"path"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

// sandboxFlag registers -s/--sandbox with completion of active sandboxes.
func sandboxFlag(cmd *cobra.Command, app *App, ref *string) {
	cmd.Flags().StringVarP(ref, "sandbox", "s", "", "sandbox `ID`, unique id prefix or label")
	cmd.RegisterFlagCompletionFunc("sandbox", completeSandboxes(app, true))
}

// target resolves the client and the sandbox a per-sandbox command works
// on: ref when given, else the only active one. With create, local mode
// makes a sandbox when none is active (commands that put something into
// one); commands that only look never do.
func target(ctx context.Context, app *App, ref string, create bool) (*client.Client, api.Sandbox, error) {
	c, err := app.Client()
	if err != nil {
		return nil, api.Sandbox{}, err
	}
	local := false
	if create {
		cfg, err := app.Config()
		if err != nil {
			return nil, api.Sandbox{}, err
		}
		local = cfg.Local
	}
	sb, err := pickSandbox(ctx, c, ref, local, app.IO.ErrOut)
	if err != nil {
		return nil, api.Sandbox{}, err
	}
	return c, sb, nil
}

// Typed roots of a sandbox, as the file routes name them.
const (
	rootWorkspace = "/workspace"
	rootOutputs   = "/mnt/user-data/outputs"
	rootUploads   = "/mnt/user-data/uploads"
	rootSkills    = "/mnt/skills"
)

// sandboxPath names p the way the file routes resolve it, as a clean
// absolute path: "", "/" and relative paths are in the workspace, and
// /outputs, /uploads and /skills are aliases of their roots. Commands that
// go through exec (rm) need it, since exec takes "/" literally.
func sandboxPath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if !strings.HasPrefix(p, "/") {
		c := path.Clean(p)
		switch {
		case c == "." || c == "workspace":
			return rootWorkspace
		case strings.HasPrefix(c, "workspace/"):
			return "/" + c
		}
		return path.Join(rootWorkspace, c)
	}
	c := path.Clean(p)
	if c == "/" {
		return rootWorkspace
	}
	for _, a := range []struct{ alias, root string }{{"/outputs", rootOutputs}, {"/uploads", rootUploads}, {"/skills", rootSkills}} {
		if rest, ok := strings.CutPrefix(c, a.alias); ok && (rest == "" || rest[0] == '/') {
			return a.root + rest
		}
	}
	return c
}

// isSandboxRoot reports whether the clean path p is a typed root (or one
// of the directories holding them) rather than something inside one.
func isSandboxRoot(p string) bool {
	switch p {
	case rootWorkspace, "/tmp", rootOutputs, rootUploads, rootSkills, "/mnt", "/mnt/user-data":
		return true
	}
	return false
}

// remoteStat says whether p exists in the sandbox and is a directory. It
// lists p's parent, which also says whether p is a directory; a missing
// parent, or one that is a file, means p is missing too.
func remoteStat(ctx context.Context, c *client.Client, id, p string) (exists, isDir bool, err error) {
	v := sandboxPath(p)
	if isSandboxRoot(v) {
		return true, true, nil
	}
	res, err := c.Ls(ctx, id, api.LsRequest{Path: path.Dir(v)})
	if pathNotFound(err) || notADirectory(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	// Compare names only: entries are named by the parent's real path,
	// which differs from v's when the parent is reached through a symlink.
	name := path.Base(v)
	for _, e := range res.Entries {
		if path.Base(strings.TrimSuffix(e.Path, "/")) == name {
			return true, e.IsDir, nil
		}
	}
	return false, false, nil
}
