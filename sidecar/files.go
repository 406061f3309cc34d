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
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// largeFilesHint says how to move a file too large for a JSON route.
const largeFilesHint = "move large files with PUT and GET /v1/sandboxes/{id}/files/raw, which stream (boxkite files cp), or edit them with exec"

// truncatedMark ends a /view result cut at api.MaxViewOutput.
const truncatedMark = "\n... (truncated)"

// tooLarge refuses a file past a JSON route's limit. Its hint names the
// control plane's routes, which a client calls (the sidecar's own
// /files/raw is reached only through them), and the CLI command in an
// aside, which an agent's tools leave out and the E2B facade drops the
// hint for (tools.NamesCommand).
func tooLarge(format string, args ...any) *api.Error {
	return api.Errorf(http.StatusUnprocessableEntity, api.CodeValidation, format, args...).
		WithHint(largeFilesHint)
}

func (h *Handler) fileCreate(w http.ResponseWriter, r *http.Request) error {
	var req api.FileCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Path == "" {
		return errNoPath("write")
	}
	if len(req.Content) > api.MaxFileContent {
		return tooLarge("content is %d bytes; the limit is %d MiB", len(req.Content), api.MaxFileContent>>20)
	}
	v, t, done, err := h.openTarget(req.Path, false)
	if err != nil {
		return err
	}
	defer done()
	if err := t.writable("write to", req.Path); err != nil {
		return err
	}
	if err := fileName(t, req.Path); err != nil {
		return err
	}
	n, err := v.writeFile(t, req.Path, strings.NewReader(req.Content), nil, durabilityOf(r))
	if err != nil {
		return err
	}
	// Created says whether the name was new when it was resolved; an
	// overwrite answers false.
	return writeJSON(w, http.StatusOK, api.FileCreateResult{Path: t.virt(), Size: n, Created: !t.exists})
}

func (h *Handler) view(w http.ResponseWriter, r *http.Request) error {
	var req api.ViewRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	v, t, done, err := h.openTarget(req.Path, false)
	if err != nil {
		return err
	}
	defer done()
	if !t.exists {
		return errFileNotFound(req.Path)
	}
	if t.isDir() {
		var des []dirEntry
		if err := v.user.do(func() (err error) { des, err = readDir(t.cur.dir()); return err }); err != nil {
			return fileError(err, "read", req.Path)
		}
		names := make([]string, 0, len(des))
		for _, de := range des {
			names = append(names, de.name)
		}
		return writeJSON(w, http.StatusOK, api.ViewResult{IsDirectory: true, Entries: names})
	}
	f, fi, err := v.openFile(t, req.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	limit := h.limits().ViewMaxFile
	if fi.Size() > limit {
		return tooLarge("File is too large to view: %s is %d bytes, the limit is %d", req.Path, fi.Size(), limit).
			WithHint("read parts of it with exec, e.g. head, tail or sed -n")
	}
	b, err := readAtMost(f, limit)
	if errors.Is(err, errGrew) {
		return tooLarge("File is too large to view: %s grew past the limit of %d bytes while it was read", req.Path, limit).
			WithHint("read parts of it with exec, e.g. head, tail or sed -n")
	}
	if err != nil {
		return fmt.Errorf("read file: %w", err)
	}
	if !utf8.Valid(b) {
		return tooLarge("File is not UTF-8 text (binary?): %s", req.Path).
			WithHint("inspect it with exec (file, xxd, base64) or download it with GET /v1/sandboxes/{id}/files/raw (boxkite files cp ID:PATH DST)")
	}
	content, lines := viewRange(string(b), req.ViewRange)
	return writeJSON(w, http.StatusOK, api.ViewResult{Content: truncateView(content), Lines: lines})
}

// errGrew is readAtMost's answer to a file longer than its limit.
var errGrew = errors.New("the file grew past the limit while it was read")

// readAtMost reads r to its end, refusing more than limit bytes. The size
// checked against the limit is the stat's, before the read: a file a
// sandbox process appends to meanwhile was read whole, however large (a
// log written in a loop), and an edit of a truncated read would have lost
// the rest.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errGrew
	}
	return b, nil
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
	if req.Path == "" {
		return errNoPath("edit")
	}
	if req.OldStr == "" {
		return api.Errorf(http.StatusUnprocessableEntity, api.CodeValidation, "old_str must not be empty").
			WithHint("pass the exact text to replace; to write a whole file use file-create")
	}
	if len(req.OldStr) > api.MaxFileContent || len(req.NewStr) > api.MaxFileContent {
		return tooLarge("old_str and new_str are limited to %d MiB each", api.MaxFileContent>>20)
	}
	v, t, done, err := h.openTarget(req.Path, false)
	if err != nil {
		return err
	}
	defer done()
	if err := t.writable("edit", req.Path); err != nil {
		return err
	}
	if err := fileName(t, req.Path); err != nil {
		return err
	}
	unlock, err := h.editLock(t)
	if err != nil {
		return err
	}
	defer unlock()
	f, fi, err := v.openFile(t, req.Path)
	if err != nil {
		return err
	}
	if fi.Size() > api.MaxFileContent {
		f.Close()
		return tooLarge("File is too large to edit: %s is %d bytes, the limit is %d MiB", req.Path, fi.Size(), api.MaxFileContent>>20)
	}
	b, err := readAtMost(f, api.MaxFileContent)
	f.Close()
	if errors.Is(err, errGrew) {
		return tooLarge("File is too large to edit: %s grew past the limit of %d MiB while it was read", req.Path, api.MaxFileContent>>20)
	}
	if err != nil {
		return fmt.Errorf("read file: %w", err)
	}
	old := []byte(req.OldStr)
	n := bytes.Count(b, old)
	switch {
	case n == 0:
		return writeJSON(w, http.StatusOK, api.StrReplaceResult{Path: t.virt()})
	case n > 1 && !req.ReplaceAll:
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "old_str appears %d times. Must appear exactly once.", n).
			WithHint("add surrounding context to old_str, or set replace_all")
	}
	out := bytes.ReplaceAll(b, old, []byte(req.NewStr))
	if _, err := v.writeFile(t, req.Path, bytes.NewReader(out), nil, durabilityOf(r)); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.StrReplaceResult{Path: t.virt(), Replaced: true, Occurrences: n})
}

// editKey is a file as editLock locks it: its directory (device and
// inode) and name.
type editKey struct {
	dev, ino uint64
	name     string
}

// editLock waits for the lock that serialises str-replace's read, replace
// and write of t's file, and returns its release: two edits of one file
// through the API each read what the other wrote, and neither is lost
// (before, both read the old content and the last rename won, though both
// answered replaced). A command in the sandbox writing the file meanwhile
// is not held off: that is a race of its own.
func (h *Handler) editLock(t *target) (func(), error) {
	var st unix.Stat_t
	if err := unix.Fstat(t.cur.dir(), &st); err != nil {
		return nil, fmt.Errorf("stat directory: %w", err)
	}
	return h.edits.Lock(editKey{uint64(st.Dev), st.Ino, t.name}), nil
}

// presentFiles hands files to the user through the outputs directory. The
// reference also uploads them to object storage and needs a storage prefix;
// we have none, so a file is presented once it is in outputs.
func (h *Handler) presentFiles(w http.ResponseWriter, r *http.Request) error {
	var req api.PresentFilesRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	v, err := h.openView()
	if err != nil {
		return err
	}
	defer v.close()
	hasOutputs := slices.ContainsFunc(v.tops, func(t top) bool { return t.virt == vOutputs })
	out := api.PresentFilesResult{Files: []api.PresentedFile{}, CopyOperations: []string{}}
	for _, p := range req.Filepaths {
		file, copied, err := h.presentOne(v, p, hasOutputs)
		if err != nil {
			if _, ok := errors.AsType[*api.Error](err); ok && !errors.Is(err, errNoOutputs) {
				continue // missing, outside the roots, or not a regular file: skipped, as in the reference
			}
			return err
		}
		if copied {
			out.CopyOperations = append(out.CopyOperations, fmt.Sprintf("%s -> %s", virtual(p), file.FilePath))
		}
		out.Files = append(out.Files, file)
	}
	return writeJSON(w, http.StatusOK, out)
}

// errNoOutputs refuses present_files in a sandbox without an outputs directory.
var errNoOutputs = api.Errorf(http.StatusConflict, api.CodeConflict, "this sandbox has no %s directory", vOutputs)

// presentOne presents the file p, copying it to the outputs directory
// under its base name (silently replacing a file of that name) unless it
// is there already.
func (h *Handler) presentOne(v *fsView, p string, hasOutputs bool) (api.PresentedFile, bool, error) {
	t, err := v.resolve(p, false)
	if err != nil {
		return api.PresentedFile{}, false, err
	}
	defer t.close()
	f, fi, err := v.openFile(t, p)
	if err != nil {
		return api.PresentedFile{}, false, err
	}
	defer f.Close()
	copied := t.topRoot().virt != vOutputs
	virt := t.virt()
	if copied {
		if !hasOutputs {
			return api.PresentedFile{}, false, errNoOutputs
		}
		dst, err := v.resolve(path.Join(vOutputs, t.name), false)
		if err != nil {
			return api.PresentedFile{}, false, err
		}
		defer dst.close()
		if _, err := v.writeFile(dst, dst.virt(), f, nil, syncNow); err != nil {
			return api.PresentedFile{}, false, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return api.PresentedFile{}, false, fmt.Errorf("rewind %s: %w", p, err)
		}
		virt = dst.virt()
	}
	return api.PresentedFile{
		FilePath:    virt,
		StorageKey:  "outputs/" + strings.TrimPrefix(virt, vOutputs+"/"),
		Size:        fi.Size(),
		ContentType: contentType(f, virt),
	}, copied, nil
}

// contentType guesses a file's media type from its extension, else from
// its first bytes.
func contentType(f *os.File, name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
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
	v, t, done, err := h.openTarget(req.Path, true)
	if err != nil {
		return err
	}
	defer done()
	out := api.LsResult{Entries: []api.LsEntry{}}
	switch {
	case !t.exists:
		return errDirNotFound(req.Path)
	case !t.isDir():
		return errLsFile(req.Path)
	}
	err = v.user.do(func() error {
		des, err := readDir(t.cur.dir())
		if err != nil {
			return err
		}
		for _, de := range des {
			fi, ok := v.entryInside(t.cur, de)
			if ok {
				out.Entries = append(out.Entries, lsEntry(joinPath(t.virt(), de.name), fi))
			}
		}
		return nil
	})
	if err != nil {
		return fileError(err, "read", req.Path)
	}
	slices.SortFunc(out.Entries, func(a, b api.LsEntry) int { return strings.Compare(a.Path, b.Path) })
	return writeJSON(w, http.StatusOK, out)
}

// entryInside returns what the entry de of the directory at cur is, a
// symlink followed, if it stays inside the roots: listings silently skip
// entries that do not, so they are no oracle for what lies outside. Call
// it as the sandbox user.
func (v *fsView) entryInside(cur *cursor, de dirEntry) (fs.FileInfo, bool) {
	if de.kind() != unix.S_IFLNK {
		if cur.topRoot().listOnly {
			return v.innerTop(cur, de)
		}
		return de.info(), true
	}
	w := walker{v: v, listing: true}
	t, err := w.walk(cur.sub(), []string{de.name})
	if err != nil {
		return nil, false
	}
	defer t.close()
	if !t.exists {
		return nil, false
	}
	var st unix.Stat_t
	if t.isDir() {
		err = unix.Fstat(t.cur.dir(), &st)
	} else {
		err = unix.Fstatat(t.cur.dir(), t.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	return statInfo{de.name, st}, err == nil
}

// innerTop admits an entry of a list-only root (/mnt, /mnt/user-data)
// only if it is a root itself.
func (v *fsView) innerTop(cur *cursor, de dirEntry) (fs.FileInfo, bool) {
	host := joinPath(cur.host(), de.name)
	for _, i := range cur.topRoot().inner {
		if v.tops[i].real == host {
			return de.info(), true
		}
	}
	return nil, false
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
