package cli

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// storedHint is what a path missing from object storage gets.
const storedHint = "list the stored files with 'boxkite files ls --from-storage -s ID'"

// downloadStored copies src, a file or (with -r) a directory of the
// workspace, out of the object storage the sandbox is synced to, to the
// local dst, as files cp does from the sandbox itself.
func (x *copier) downloadStored(ctx context.Context, src, dst string) error {
	rel, ok := storedRel(src)
	if !ok {
		return usageErrorf("only /workspace is synced to object storage (docs/storage.md)", "%s is not in /workspace", sandboxPath(src))
	}
	files, err := x.c.StoredFiles(ctx, x.id)
	if err != nil {
		return fmt.Errorf("list the stored files of %s: %w", x.id, err)
	}
	var under []api.StoredFile
	for _, f := range files.Files {
		if f.Path == rel {
			return x.downloadStoredFile(ctx, rel, dst)
		}
		if rel == "" || strings.HasPrefix(f.Path, rel+"/") {
			under = append(under, f)
		}
	}
	if len(under) == 0 {
		return &notFoundError{err: fmt.Errorf("%s is not in the object storage of sandbox %s", sandboxPath(src), x.id), hint: storedHint}
	}
	if !x.recursive {
		return usageErrorf("copy directories with -r", "%s is a directory", sandboxPath(src))
	}
	if dst == "-" {
		return usageErrorf("give a local directory", "a directory cannot be copied to stdout")
	}
	if fi, err := os.Stat(dst); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dst)
		}
		if !isContentsPath(src) {
			dst = filepath.Join(dst, path.Base(sandboxPath(src)))
		}
	}
	var total int64
	for _, f := range under {
		local, ok := storedTarget(dst, rel, f.Path)
		if !ok {
			return fmt.Errorf("the server named a stored file %q outside %s", f.Path, sandboxPath(src))
		}
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return localErr(err)
		}
		d, err := x.c.DownloadStored(ctx, x.id, f.Path)
		if err != nil {
			return fmt.Errorf("copy %s: %w", rootWorkspace+"/"+f.Path, err)
		}
		n, err := x.save(d, rootWorkspace+"/"+f.Path, local)
		d.Close()
		if err != nil {
			return err
		}
		total += n
	}
	fmt.Fprintf(x.io.ErrOut, "copied %s:%s from object storage to %s (%d %s, %s)\n", x.id, sandboxPath(src), dst, len(under), plural(len(under), "file"), humanBytes(total))
	return nil
}

func (x *copier) downloadStoredFile(ctx context.Context, rel, dst string) error {
	src := rootWorkspace + "/" + rel
	d, err := x.c.DownloadStored(ctx, x.id, rel)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer d.Close()
	if dst == "-" {
		dst = ""
	} else if fi, err := os.Stat(dst); (err == nil && fi.IsDir()) || strings.HasSuffix(dst, string(filepath.Separator)) {
		dst = filepath.Join(dst, path.Base(rel))
	}
	n, err := x.save(d, src, dst)
	if err != nil || dst == "" {
		return err
	}
	fmt.Fprintf(x.io.ErrOut, "copied %s:%s from object storage to %s (%s)\n", x.id, src, dst, humanBytes(n))
	return nil
}

// storedRel is p (a sandbox path) relative to the workspace, as object
// storage names it ("" for the workspace); false outside it.
func storedRel(p string) (string, bool) {
	sp := sandboxPath(p)
	if sp == rootWorkspace {
		return "", true
	}
	rel, ok := strings.CutPrefix(sp, rootWorkspace+"/")
	if !ok || rel == "" {
		return "", false
	}
	return rel, true
}

// storedTarget is where the stored file p (relative to the workspace)
// lands when the directory rel is copied to the local dir; false when p
// is not below rel or would land outside dir.
func storedTarget(dir, rel, p string) (string, bool) {
	sub := p
	if rel != "" {
		var ok bool
		if sub, ok = strings.CutPrefix(p, rel+"/"); !ok {
			return "", false
		}
	}
	for c := range strings.SplitSeq(sub, "/") {
		if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "\\\x00") {
			return "", false
		}
	}
	local := filepath.FromSlash(sub)
	if !filepath.IsLocal(local) {
		return "", false
	}
	return filepath.Join(dir, local), true
}
