package sidecar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// truncatedMark ends a /view result cut at api.MaxViewOutput.
const truncatedMark = "\n... (truncated)"

func tooLarge(format string, args ...any) *api.Error {
	return api.Errorf(http.StatusUnprocessableEntity, api.CodeValidation, format, args...)
}

func (h *Handler) fileCreate(w http.ResponseWriter, r *http.Request) error {
	var req api.FileCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.Content) > api.MaxFileContent {
		return tooLarge("content is %d bytes; the limit is %d MiB", len(req.Content), api.MaxFileContent>>20)
	}
	pm := h.paths()
	res, err := pm.resolve(req.Path, false)
	if err != nil {
		return err
	}
	if err := res.writable("write to", req.Path); err != nil {
		return err
	}
	meta, err := h.metaOf(res.host, req.Path)
	if err != nil {
		return err
	}
	n, err := pm.real().writeFile(res.host, strings.NewReader(req.Content), meta)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.FileCreateResult{Path: res.virt, Size: n, Created: true})
}

func (h *Handler) view(w http.ResponseWriter, r *http.Request) error {
	var req api.ViewRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	pm := h.paths()
	res, err := pm.resolve(req.Path, false)
	if err != nil {
		return err
	}
	fi, err := os.Stat(res.host)
	if errors.Is(err, fs.ErrNotExist) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "File not found: %s", req.Path)
	}
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if fi.IsDir() {
		des, err := os.ReadDir(res.host) // sorted by name
		if err != nil {
			return fmt.Errorf("read directory: %w", err)
		}
		names := make([]string, 0, len(des))
		for _, de := range des {
			names = append(names, de.Name())
		}
		return writeJSON(w, http.StatusOK, api.ViewResult{IsDirectory: true, Entries: names})
	}
	f, fi, err := pm.real().openRegular(res.host, req.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if max := h.limits().ViewMaxFile; fi.Size() > max {
		return tooLarge("File is too large to view: %s is %d bytes, the limit is %d", req.Path, fi.Size(), max).
			WithHint("read parts of it with exec, e.g. head, tail or sed -n")
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read file: %w", err)
	}
	if !utf8.Valid(b) {
		return tooLarge("File is not UTF-8 text (binary?): %s", req.Path).
			WithHint("inspect it with exec (file, xxd, base64) or download it with GET /files/raw")
	}
	content, lines := viewRange(string(b), req.ViewRange)
	return writeJSON(w, http.StatusOK, api.ViewResult{Content: truncateView(content), Lines: lines})
}

// viewRange returns the lines [start, end] of content (1-indexed, inclusive,
// end -1 meaning the last) when rng has exactly two elements, else all of
// it, and the total number of lines. Selected lines are joined without a
// final newline, as the reference's "\n".join does.
func viewRange(content string, rng []int) (string, int) {
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // a final newline ends the last line, it does not start one
	}
	total := len(lines)
	if len(rng) != 2 {
		return content, total
	}
	start, end := max(0, rng[0]-1), rng[1]
	if end < 0 || end > total {
		end = total
	}
	if start >= end {
		return "", total
	}
	return strings.TrimSuffix(strings.Join(lines[start:end], ""), "\n"), total
}

// truncateView cuts s to api.MaxViewOutput bytes on a rune boundary.
func truncateView(s string) string {
	if len(s) <= api.MaxViewOutput {
		return s
	}
	cut := api.MaxViewOutput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedMark
}

func (h *Handler) strReplace(w http.ResponseWriter, r *http.Request) error {
	var req api.StrReplaceRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.OldStr == "" {
		return api.Errorf(http.StatusUnprocessableEntity, api.CodeValidation, "old_str must not be empty")
	}
	if len(req.OldStr) > api.MaxFileContent || len(req.NewStr) > api.MaxFileContent {
		return tooLarge("old_str and new_str are limited to %d MiB each", api.MaxFileContent>>20)
	}
	pm := h.paths()
	res, err := pm.resolve(req.Path, false)
	if err != nil {
		return err
	}
	if err := res.writable("edit", req.Path); err != nil {
		return err
	}
	rs := pm.real()
	f, fi, err := rs.openRegular(res.host, req.Path)
	if err != nil {
		return err
	}
	if fi.Size() > api.MaxFileContent {
		f.Close()
		return tooLarge("File is too large to edit: %s is %d bytes, the limit is %d MiB", req.Path, fi.Size(), api.MaxFileContent>>20)
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("read file: %w", err)
	}
	old := []byte(req.OldStr)
	n := bytes.Count(b, old)
	switch {
	case n == 0:
		return writeJSON(w, http.StatusOK, api.StrReplaceResult{Path: res.virt})
	case n > 1 && !req.ReplaceAll:
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "old_str appears %d times. Must appear exactly once.", n).
			WithHint("add surrounding context to old_str, or set replace_all")
	}
	meta, err := h.metaOf(res.host, req.Path)
	if err != nil {
		return err
	}
	out := bytes.ReplaceAll(b, old, []byte(req.NewStr))
	if _, err := rs.writeFile(res.host, bytes.NewReader(out), meta); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.StrReplaceResult{Path: res.virt, Replaced: true, Occurrences: n})
}

// presentFiles hands files to the user through the outputs directory. The
// reference also uploads them to object storage and needs a storage prefix;
// we have none, so a file is presented once it is in outputs.
func (h *Handler) presentFiles(w http.ResponseWriter, r *http.Request) error {
	var req api.PresentFilesRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	pm := h.paths()
	rs := pm.real()
	outputs := slices.IndexFunc(rs, func(r root) bool { return r.virt == vOutputs })
	out := api.PresentFilesResult{Files: []api.PresentedFile{}, CopyOperations: []string{}}
	for _, p := range req.Filepaths {
		res, err := pm.resolve(p, false)
		if err != nil {
			continue // missing, outside the roots, or a directory: skipped, as in the reference
		}
		if res.root.virt != vOutputs {
			if outputs < 0 {
				return api.Errorf(http.StatusConflict, api.CodeConflict, "this sandbox has no %s directory", vOutputs)
			}
			if res, err = h.copyToOutputs(rs, rs[outputs], res); err != nil {
				if _, ok := errors.AsType[*api.Error](err); ok {
					continue // not a regular file
				}
				return err
			}
			out.CopyOperations = append(out.CopyOperations, fmt.Sprintf("%s -> %s", virtual(p), res.virt))
		}
		f, fi, err := rs.openRegular(res.host, p)
		if err != nil {
			continue
		}
		ctype := contentType(f, res.host)
		f.Close()
		out.Files = append(out.Files, api.PresentedFile{
			FilePath:    res.virt,
			StorageKey:  "outputs/" + strings.TrimPrefix(res.virt, vOutputs+"/"),
			Size:        fi.Size(),
			ContentType: ctype,
		})
	}
	return writeJSON(w, http.StatusOK, out)
}

// copyToOutputs copies src to the outputs directory under its base name,
// silently replacing a file of that name.
func (h *Handler) copyToOutputs(rs realRoots, outputs root, src resolved) (resolved, error) {
	f, _, err := rs.openRegular(src.host, src.virt)
	if err != nil {
		return resolved{}, err
	}
	defer f.Close()
	name := filepath.Base(src.host)
	dst := resolved{host: filepath.Join(outputs.host, name), virt: path.Join(vOutputs, name), root: outputs}
	meta, err := h.metaOf(dst.host, dst.virt)
	if err != nil {
		return resolved{}, err
	}
	if _, err := rs.writeFile(dst.host, f, meta); err != nil {
		return resolved{}, err
	}
	return dst, nil
}

// contentType guesses a file's media type from its extension, else from
// its first bytes.
func contentType(f *os.File, name string) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return http.DetectContentType(head[:n])
}

func (h *Handler) ls(w http.ResponseWriter, r *http.Request) error {
	var req api.LsRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	pm := h.paths()
	res, err := pm.resolve(req.Path, true)
	if err != nil {
		return err
	}
	out := api.LsResult{Entries: []api.LsEntry{}}
	fi, err := os.Stat(res.host)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return writeJSON(w, http.StatusOK, out)
	case err != nil:
		return fmt.Errorf("stat: %w", err)
	case !fi.IsDir():
		out.Entries = append(out.Entries, lsEntry(res.virt, fi))
		return writeJSON(w, http.StatusOK, out)
	}
	des, err := os.ReadDir(res.host)
	if err != nil {
		return fmt.Errorf("read directory: %w", err)
	}
	rs := pm.real()
	for _, de := range des {
		host := filepath.Join(res.host, de.Name())
		if !rs.contains(host, true) {
			continue
		}
		fi, err := os.Stat(host)
		if err != nil {
			continue
		}
		out.Entries = append(out.Entries, lsEntry(path.Join(res.virt, de.Name()), fi))
	}
	slices.SortFunc(out.Entries, func(a, b api.LsEntry) int { return strings.Compare(a.Path, b.Path) })
	return writeJSON(w, http.StatusOK, out)
}

// lsEntry describes fi at the virtual path virt. An entry is named where it
// was found, not by its symlink target as the reference does, so a listing
// reads like the directory it lists.
func lsEntry(virt string, fi fs.FileInfo) api.LsEntry {
	e := api.LsEntry{Path: virt, IsDir: fi.IsDir(), Size: fi.Size(), ModifiedAt: fi.ModTime().UTC()}
	if e.IsDir {
		e.Path += "/"
		e.Size = 0
	}
	return e
}
