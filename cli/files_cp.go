package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/spf13/cobra"
)

// cpArg is one side of files cp: a local path, or ID:PATH in a sandbox.
type cpArg struct {
	remote bool
	ref    string // sandbox reference before the colon; "" means the selected sandbox
	path   string
}

// parseCpArg reads ID:PATH (and :PATH) as a sandbox path. A colon after a
// slash belongs to a local name, so ./a:b is local.
func parseCpArg(s string) cpArg {
	i := strings.IndexByte(s, ':')
	if i < 0 || strings.ContainsRune(s[:i], '/') {
		return cpArg{path: s}
	}
	return cpArg{remote: true, ref: s[:i], path: s[i+1:]}
}

func (a cpArg) String() string {
	if !a.remote {
		return a.path
	}
	return a.ref + ":" + orWorkspace(a.path)
}

type cpOptions struct {
	ref         string
	recursive   bool
	fromStorage bool
}

func newFilesCpCmd(app *App) *cobra.Command {
	var opts cpOptions
	cmd := &cobra.Command{
		Use:   "cp [-r] SRC DST",
		Short: "Copy files and directories between this machine and a sandbox",
		Long: `Copy a file or, with -r, a directory tree between this machine and a sandbox.
The sandbox side is written ID:PATH (ID is an id, a unique prefix or a label),
or :PATH for the sandbox chosen with -s or the only active one. Files stream
as they are, of any size; trees travel as a tar stream keeping modes, times
and symlinks. "-" as the local side is stdin or stdout (files only).

As with cp, a destination that is an existing directory (or ends in /)
receives the source under its own name; otherwise the copy is named DST.
End a directory source in /. to copy what is inside it instead.

--from-storage copies out of the object storage the server syncs
workspaces to (docs/storage.md) instead of the sandbox: a file, or with -r
a directory of /workspace, also after the sandbox is destroyed.`,
		Example: `  boxkite files cp ./data.csv :/workspace/
  boxkite files cp -r ./src build:/workspace/src
  boxkite files cp 3f2a:/workspace/out.bin ./out.bin
  boxkite files cp -r :/workspace/results .
  boxkite files cp --from-storage 3f2a:/workspace/out.bin ./out.bin`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := parseCpArg(args[0]), parseCpArg(args[1])
			switch {
			case src.remote && dst.remote:
				return usageErrorf(helpHint(cmd), "both sides are in a sandbox; one must be a local path (write ./a:b for a local name with a colon)")
			case !src.remote && !dst.remote:
				return usageErrorf("write the sandbox side as ID:PATH or :PATH", "neither side is in a sandbox")
			}
			remote := src
			if dst.remote {
				remote = dst
			}
			ref := opts.ref
			if remote.ref != "" {
				if ref != "" && ref != remote.ref {
					return usageErrorf(helpHint(cmd), "-s %s and %s name different sandboxes", ref, remote)
				}
				ref = remote.ref
			}
			if opts.fromStorage && dst.remote {
				return usageErrorf(helpHint(cmd), "--from-storage copies out of object storage: the destination must be a local path")
			}
			c, sb, err := target(cmd.Context(), app, ref, dst.remote)
			if opts.fromStorage && ref != "" {
				// A destroyed sandbox's stored files are copied too.
				if c, err = app.Client(); err == nil {
					sb, err = resolveSandbox(cmd.Context(), c, ref, false)
				}
			}
			if err != nil {
				return err
			}
			x := &copier{c: c, id: sb.ID, io: app.IO, recursive: opts.recursive}
			if opts.fromStorage {
				return x.downloadStored(cmd.Context(), src.path, dst.path)
			}
			if dst.remote {
				return x.upload(cmd.Context(), src.path, dst.path)
			}
			return x.download(cmd.Context(), src.path, dst.path)
		},
	}
	cmd.Flags().StringVarP(&opts.ref, "sandbox", "s", "", "sandbox `ID` for :PATH, unique id prefix or label")
	cmd.RegisterFlagCompletionFunc("sandbox", completeSandboxes(app, true))
	cmd.Flags().BoolVarP(&opts.recursive, "recursive", "r", false, "copy directories and everything in them")
	cmd.Flags().BoolVar(&opts.fromStorage, "from-storage", false, "copy out of the files synced to object storage, also after the sandbox is destroyed (docs/storage.md)")
	return cmd
}

// copier runs one files cp.
type copier struct {
	c         *client.Client
	id        string
	io        IO
	recursive bool
}

// upload copies the local src to dst in the sandbox.
func (x *copier) upload(ctx context.Context, src, dst string) error {
	if src == "-" {
		if dst == "" || strings.HasSuffix(dst, "/") {
			return usageErrorf("name the file, e.g. :/workspace/data.bin", "copying stdin needs a file name in the sandbox")
		}
		if x.io.InTTY || x.io.In == nil {
			return usageErrorf("pipe the data in, e.g. tar c . | boxkite files cp - :/workspace/src.tar", "stdin is a terminal")
		}
		return x.uploadFile(ctx, x.io.In, -1, "stdin", dst)
	}
	contents := isContentsPath(src)
	fi, err := os.Stat(src)
	if err != nil {
		return localErr(err)
	}
	exists, isDir, err := remoteStat(ctx, x.c, x.id, dst)
	if err != nil {
		return fmt.Errorf("look up %s in the sandbox: %w", orWorkspace(dst), err)
	}
	into := isDir || strings.HasSuffix(dst, "/") || dst == ""
	if !fi.IsDir() {
		if into {
			dst = path.Join(sandboxPath(dst), filepath.Base(src))
		}
		f, err := os.Open(src)
		if err != nil {
			return localErr(err)
		}
		defer f.Close()
		size := int64(-1) // unknown: a FIFO, a device
		if fi.Mode().IsRegular() {
			size = fi.Size()
		}
		return x.uploadFile(ctx, f, size, src, dst)
	}
	if !x.recursive {
		return usageErrorf("copy directories with -r", "%s is a directory", src)
	}
	if exists && !isDir {
		return fmt.Errorf("%s exists in the sandbox and is not a directory", sandboxPath(dst))
	}
	dst = sandboxPath(dst)
	if exists && !contents {
		dst = path.Join(dst, filepath.Base(filepath.Clean(src)))
	}
	return x.uploadTree(ctx, src, dst)
}

// isContentsPath reports whether p ends in "/.": copy what is inside.
func isContentsPath(p string) bool {
	return strings.HasSuffix(p, "/.") || p == "."
}

func (x *copier) uploadFile(ctx context.Context, r io.Reader, size int64, src, dst string) error {
	p := newTransferProgress(x.io, "uploading", size)
	declared := size // sent as Content-Length, for the server's free-space check
	if declared == 0 {
		declared = -1 // /proc's files say 0 and hold more: send what is there
	}
	res, err := x.c.UploadFileSized(ctx, x.id, dst, p.reader(r), declared)
	p.done()
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	fmt.Fprintf(x.io.ErrOut, "copied %s to %s:%s (%s)\n", src, x.id, res.Path, humanBytes(res.Size))
	return nil
}

// uploadTree streams dir as a tar, written by a goroutine into a pipe as
// the upload reads it, so nothing is staged on disk or in memory.
func (x *copier) uploadTree(ctx context.Context, dir, dst string) error {
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := writeTree(pw, dir, x.io.ErrOut)
		pw.CloseWithError(err)
		written <- err
	}()
	p := newTransferProgress(x.io, "uploading", -1)
	res, err := x.c.UploadArchive(ctx, x.id, dst, p.reader(pr))
	p.done()
	// Unblock the writer if the upload ended before the archive did.
	pr.CloseWithError(errors.New("upload ended"))
	if werr := <-written; werr != nil && !errors.Is(werr, io.ErrClosedPipe) && err != nil {
		// The archive could not be written; that is the real cause.
		return fmt.Errorf("copy %s: %w", dir, werr)
	}
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", dir, dst, err)
	}
	fmt.Fprintf(x.io.ErrOut, "copied %s to %s:%s (%d %s, %s)\n", dir, x.id, dst, res.Files, plural(res.Files, "file"), humanBytes(res.Bytes))
	return nil
}

// download copies src in the sandbox to the local dst.
func (x *copier) download(ctx context.Context, src, dst string) error {
	exists, isDir, err := remoteStat(ctx, x.c, x.id, src)
	if err != nil {
		return fmt.Errorf("look up %s in the sandbox: %w", orWorkspace(src), err)
	}
	if !exists {
		return &notFoundError{err: fmt.Errorf("%s not found in sandbox %s", sandboxPath(src), x.id), hint: pathHint}
	}
	local, lerr := os.Stat(dst)
	localDir := lerr == nil && local.IsDir()
	if !isDir {
		if dst == "-" {
			return x.downloadFile(ctx, src, "")
		}
		if localDir || strings.HasSuffix(dst, string(filepath.Separator)) {
			dst = filepath.Join(dst, path.Base(sandboxPath(src)))
		}
		return x.downloadFile(ctx, src, dst)
	}
	if !x.recursive {
		return usageErrorf("copy directories with -r", "%s is a directory", sandboxPath(src))
	}
	if dst == "-" {
		return usageErrorf("give a local directory", "a directory cannot be copied to stdout")
	}
	if lerr == nil && !localDir {
		return fmt.Errorf("%s exists and is not a directory", dst)
	}
	if localDir && !isContentsPath(src) {
		dst = filepath.Join(dst, path.Base(sandboxPath(src)))
	}
	return x.downloadTree(ctx, src, dst)
}

// downloadFile copies the file src of the sandbox to dst ("" means
// stdout).
func (x *copier) downloadFile(ctx context.Context, src, dst string) error {
	d, err := x.c.DownloadFile(ctx, x.id, src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer d.Close()
	n, err := x.save(d, src, dst)
	if err != nil || dst == "" {
		return err
	}
	fmt.Fprintf(x.io.ErrOut, "copied %s:%s to %s (%s)\n", x.id, sandboxPath(src), dst, humanBytes(n))
	return nil
}

// save writes a download to a temp file next to dst and renames it into
// place once complete, so a failed copy leaves no half file. An existing
// dst keeps its mode; dst "" means stdout. It returns the bytes written.
func (x *copier) save(d *client.Download, src, dst string) (int64, error) {
	p := newTransferProgress(x.io, "downloading", d.Size)
	defer p.done()
	if dst == "" {
		n, err := io.Copy(x.io.Out, p.reader(d))
		if err != nil {
			return n, fmt.Errorf("copy %s: %w", src, err)
		}
		return n, nil
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(dst); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".boxkite-cp-*")
	if err != nil {
		return 0, localErr(err)
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	n, err := io.Copy(f, p.reader(d))
	if err == nil && d.Size >= 0 && n != d.Size {
		err = fmt.Errorf("got %d of %d bytes", n, d.Size)
	}
	if err != nil {
		f.Close()
		return n, fmt.Errorf("copy %s: %w", src, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return n, localErr(err)
	}
	if err := f.Close(); err != nil {
		return n, localErr(err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return n, localErr(err)
	}
	return n, nil
}

func (x *copier) downloadTree(ctx context.Context, src, dst string) error {
	d, err := x.c.DownloadArchive(ctx, x.id, src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer d.Close()
	p := newTransferProgress(x.io, "downloading", -1)
	st, err := extractTree(p.reader(d), dst, x.io.ErrOut)
	p.done()
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", sandboxPath(src), dst, err)
	}
	fmt.Fprintf(x.io.ErrOut, "copied %s:%s to %s (%d %s, %s)\n", x.id, sandboxPath(src), dst, st.files, plural(st.files, "file"), humanBytes(st.bytes))
	return nil
}

// localErr makes a missing local file exit 3, like a missing remote one,
// with a hint: a sandbox path left without its ':' reads as a local one.
func localErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &notFoundError{err: err, hint: "local paths are relative to the current directory; a sandbox path starts with ':' (e.g. :/workspace/a.txt)"}
	}
	return err
}
