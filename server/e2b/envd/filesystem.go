package envd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem/filesystemconnect"
)

// filesystemService implements filesystem.Filesystem. Stat, ListDir,
// MakeDir, Move and Remove run fixed commands (find, mkdir, mv, rm) through
// the sidecar's exec, as the sandbox user inside its jail, so they see the
// sandbox's whole filesystem as a command would, with the sandbox user's
// permissions; each counts as one call of the exec budget. Watches use the
// sidecar's /watch (watch.go).
type filesystemService struct {
	h *Handler
}

var _ filesystemconnect.FilesystemHandler = filesystemService{}

// errGoneAfter is exitGoneAfter's error, for the operation to name what
// was gone.
var errGoneAfter = errors.New("gone right after the operation")

// Exit codes of the file scripts that mean more than "failed".
const (
	exitNotFound = 2
	// exitGoneAfter: the operation was done, but its result was gone
	// before the script could describe it (errGoneAfter).
	exitGoneAfter = 3
	exitExists    = 17
	exitNotDir    = 20
	// exitParentFile: a part of the move's destination's parent is there
	// and no directory (envd's EnsureDirs: "path is a file"); the script
	// wrote the part to stderr.
	exitParentFile = 4
	// exitInvalid: the move would put a directory below itself (rename's
	// EINVAL).
	exitInvalid = 22
)

// entryFormat is find's -printf format of one entry: entryFields fields
// (type, size, mode in octal, owner, group, mtime, link target, path),
// each ended by NUL, the one byte no path holds.
const entryFormat = `%y\0%s\0%m\0%u\0%g\0%T@\0%l\0%p\0`

const entryFields = 8

// linkMark ends the entries of a listing when symlinks follow: one record
// of linkFields fields for each (the path find printed for it, "%y %m" of
// what it points to, its resolved path, "" when it dangles or loops), so
// that a link is described as envd describes one (linkInfo).
const linkMark = "@links"

const linkFields = 3

// linkLoop prints the records of the links named by its arguments; a
// resolved path in the workspace is written "./…", as find writes one.
const linkLoop = `w=$(pwd -P); for p; do t=$(LC_ALL=C find -H "$p" -maxdepth 0 -printf "%y %m" 2>/dev/null); ` +
	`r=$(realpath -e -- "$p" 2>/dev/null && echo .); r=${r%??}; ` +
	`case $r in "$w") r=. ;; "$w"/*) r=".${r#"$w"}" ;; esac; printf "%s\0%s\0%s\0" "$p" "$t" "$r"; done`

// fileOp runs script (with $1… set to args) as the sandbox user, its
// output (each of stdout and stderr) cut at limit, and returns its
// stdout; exit codes exitNotFound and exitExists become not_found and
// already_exists about what. Its answer is held whole (the exec's JSON
// result, then the entries parsed from it), so before the command runs it
// reserves its bound of the server's held-output budget
// (Session.ReserveFileOp, heldOutput); release gives it back, once the
// caller is done with the output and its answer (it is never nil): an RPC
// handler defers untilAnswered with it, since Connect marshals the
// response after the handler returns.
func (s filesystemService) fileOp(ctx context.Context, op, what, script string, limit int64, detail map[string]any, args ...string) (out string, release func(), err error) {
	sess := sessionFrom(ctx)
	words := []string{"set", "--"}
	for _, a := range args {
		if strings.ContainsRune(a, 0) {
			return "", func() {}, connect.NewError(connect.CodeInvalidArgument, errors.New("a path contains a NUL byte"))
		}
		words = append(words, shellQuote(inWorkspace(inSandbox(a))))
	}
	release, err = sess.ReserveFileOp(op, heldOutput(op, limit))
	if err != nil {
		return "", func() {}, s.h.rpcError(ctx, err)
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	started := time.Now()
	res, err := sess.Exec(ctx, fileOpExec(op, strings.Join(words, " ")+"\n"+script, limit))
	if err != nil {
		return "", release, s.h.rpcError(ctx, err)
	}
	code := res.ExitCode
	if err := sess.Audit(ctx, AuditEntry{Operation: op, Detail: detail, ExitCode: &code, Started: started, Duration: time.Since(started)}); err != nil {
		return "", release, s.h.rpcError(ctx, err)
	}
	switch {
	case res.Truncated && op == "ls":
		// Whatever the exit code: a listing cut short may also have run
		// out of time.
		return "", release, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
			"the listing of %s is larger than %d MiB (about %d entries), more than one answer holds; "+
				"list a subdirectory, or a smaller depth (files.list(path, {depth: 1}) lists the directory's own entries only)",
			what, limit>>20, limit/listEntryBytes))
	case res.Truncated && res.ExitCode == 0:
		return "", release, connect.NewError(connect.CodeInternal, fmt.Errorf("%s %s: its answer is larger than %d KiB", op, what, limit>>10))
	case res.ExitCode == 0:
		return res.Stdout, release, nil
	}
	if op == "move" {
		return "", release, moveError(args[0], args[1], res.ExitCode, res.Stderr)
	}
	return "", release, scriptError(op, what, res.ExitCode, res.Stderr)
}

// moveError is the Connect error of the move script, which exited with
// code having written stderr: envd's Move's (filesystem/move.go), src and
// dst the paths as the caller named them. envd makes the destination's
// parents (permissions.EnsureDirs: internal "path is a file: P", P the
// first part there that is no directory), then calls os.Rename: a source
// that is not there is not_found "source file not found: rename S D: no
// such file or directory"; its other errors are internal "error
// renaming: rename S D: <errno>", among them "file exists" for a
// destination that is a directory (os.Rename's own check, whatever the
// directory holds), "not a directory" for a directory moved onto a file
// or a source through a file, and "invalid argument" for a directory
// moved below itself. A destination removed right after the move is
// errGoneAfter's; any other failure (a permission, a full disk) is
// scriptError's.
func moveError(src, dst string, code int, stderr string) error {
	renaming := func(errno string) error {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("error renaming: rename %s %s: %s", src, dst, errno))
	}
	switch code {
	case exitNotFound:
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("source file not found: rename %s %s: no such file or directory", src, dst))
	case exitParentFile:
		return connect.NewError(connect.CodeInternal, fmt.Errorf("path is a file: %s", asAsked(dst, fromWorkspace(strings.TrimSuffix(stderr, "\n")))))
	case exitExists:
		return renaming("file exists")
	case exitNotDir:
		return renaming("not a directory")
	case exitInvalid:
		return renaming("invalid argument")
	}
	return scriptError("move", src, code, stderr)
}

// fileOpExec is the exec request of file operation op running command,
// each of its streams cut at limit. A listing's is stopped there
// (OnOutputLimit "stop": the sidecar kills the command's process group
// once a stream passes limit), since a listing cut is refused whatever
// follows: the walk of a directory far over the limit ends there, not at
// its end or the timeout, whatever signal dispositions the sandbox's
// commands start with. (A find with SIGPIPE ignored walked on when the
// reader its output went through, head -c, stopped at the limit.) The
// others change things, and run to their end.
func fileOpExec(op, command string, limit int64) api.ExecRequest {
	req := api.ExecRequest{Command: command, Description: "e2b " + op, Timeout: fileOpTimeout, MaxOutputBytes: limit}
	if op == "ls" {
		req.OnOutputLimit = api.OutputLimitStop
	}
	return req
}

// scriptError is the Connect error of a file script that exited with
// code, having written stderr. A path through a file ("Not a directory",
// or mkdir -p's "File exists" for a parent that is a file) is
// invalid_argument, and a read-only filesystem permission_denied, as a
// permission error is: both were internal errors. A path that is not a
// directory has envd's messages: ListDir names the path its symlinks lead
// to (the list script wrote it), MakeDir the path as asked.
func scriptError(op, what string, code int, stderr string) error {
	msg := strings.TrimSpace(stderr)
	switch {
	case code == exitNotDir && op == "ls":
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path is not a directory: %s", asAsked(what, fromWorkspace(stderr))))
	case code == exitNotDir:
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path already exists but it is not a directory: %s", what))
	}
	switch code {
	case exitNotFound:
		return notFound(op, what, stderr)
	case exitGoneAfter:
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("%w: %s", errGoneAfter, msg))
	case exitExists:
		return connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("path '%s' already exists", what))
	}
	switch {
	case strings.Contains(msg, "Permission denied"), strings.Contains(msg, "Read-only file system"):
		return connect.NewError(connect.CodePermissionDenied, errors.New(msg))
	case strings.Contains(msg, "Not a directory"), strings.Contains(msg, "File exists"):
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s %s: %s", op, what, msg))
	}
	return connect.NewError(connect.CodeInternal, fmt.Errorf("%s %s: %s", op, what, msg))
}

// notFound is the Connect error of a file script that found what not
// there (exitNotFound). ListDir and Stat answer with envd's messages, the
// SDKs' NotFoundError's: ListDir's names the first part of the path that
// is not there, its symlinks resolved (missingCheck wrote "lstat P: …" to
// stderr, P named as the caller named the path), Stat's the path itself
// (entryInfo's os.Lstat).
func notFound(op, what, stderr string) error {
	switch op {
	case "ls":
		missing, why := what, "no such file or directory"
		// The path may hold ": ", the reason does not.
		if rest, ok := strings.CutPrefix(stderr, "lstat "); ok {
			if i := strings.LastIndex(rest, ": "); i >= 0 {
				missing, why = asAsked(what, fromWorkspace(rest[:i])), rest[i+2:]
			}
		}
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("path not found: lstat %s: %s", missing, why))
	case "stat":
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("file not found: lstat %s: no such file or directory", what))
	}
	return connect.NewError(connect.CodeNotFound, fmt.Errorf("path '%s' does not exist", what))
}

// inWorkspace writes a path under Home relative to the command's working
// directory, the sidecar's workspace: wherever that really is (the jail
// mounts it at /workspace; a sidecar may be given another directory),
// the command finds it there. find then prints such paths as "./…",
// which fromWorkspace turns back. Other arguments pass unchanged.
func inWorkspace(p string) string {
	switch {
	case p == Home:
		return "."
	case strings.HasPrefix(p, Home+"/"):
		return "./" + strings.TrimPrefix(p, Home+"/")
	}
	return p
}

// fromWorkspace is inWorkspace's inverse for the paths find prints.
func fromWorkspace(p string) string {
	switch {
	case p == ".":
		return Home
	case strings.HasPrefix(p, "./"):
		return Home + p[1:]
	}
	return p
}

// Bounds of the file scripts: their time, and the output of each (the
// exec's max_output_bytes, for stdout and stderr each), which bounds what
// the answer holds and so what it reserves of the held-output budget.
const (
	fileOpTimeout = 60 // seconds
	// maxEntryOutput: stat, make_dir and move print one entry and, for a
	// symlink, its target's record (three paths of at most PATH_MAX,
	// 4 KiB, each); remove prints nothing, and rm's complaints are cut.
	maxEntryOutput = 64 << 10
	// maxListOutput: a listing, about listEntryBytes an entry, so some
	// 40,000 entries. A larger one is refused (resource_exhausted, which
	// the SDK throws as a RateLimitError with the message, as E2B's
	// client does for a message over its size limit), not held whole.
	// It reserves 4 × (4 × 4 MiB + 64 KiB) = 64.25 MiB (heldOutput), so
	// an account's default share (a sixteenth of the host's memory) has
	// room for one on a host of 1 GiB and more.
	maxListOutput = 4 << 20
	// listEntryBytes is what find prints of an entry with a path of
	// about 40 bytes, for the refusal's estimate of entries.
	listEntryBytes = 100
)

// heldOutput is what a file operation with output limit holds, counted
// in bytes of output (Session.ReserveFileOp): the exec result's stdout
// and stderr, and for a listing as much again for the entries parsed from
// it and their answer. BenchmarkListDirHeld measured a listing at its
// limit: 8.7 live bytes per byte of find's output with 40-byte paths, 10
// with 10-byte paths (the output, the EntryInfo messages and their JSON);
// 4 × limit reserves 16 (the server's hold.Answer: four copies).
func heldOutput(op string, limit int64) int64 {
	if op == "ls" {
		return 4 * limit
	}
	return 2 * limit
}

// The scripts. "exists" is true of a dangling symlink too, as lstat is.
// A path removed between the check and find's stat is not found too
// (statScript reads find's error): E2B's files.exists polling a file
// another process removes got an internal error, not false.
const (
	existsCheck = `[ -e "$1" ] || [ -L "$1" ] || { echo "no such file or directory: $1" >&2; exit 2; }` + "\n"
	statScript  = existsCheck + `{ e=$(LC_ALL=C find -P "$1" -maxdepth 0 -printf '` + entryFormat + `' 2>&1 >&3 3>&-); s=$?; } 3>&1` + "\n" +
		`[ "$s" -eq 0 ] && [ -L "$1" ] && { printf '` + linkMark + `\0'; sh -c '` + linkLoop + `' sh "$1"; } 2>/dev/null` + "\n" +
		`[ "$s" -eq 0 ] && exit 0` + "\n" +
		`printf '%s\n' "$e" >&2` + "\n" +
		`case $e in *': No such file or directory') exit 2 ;; esac` + "\n" +
		`exit "$s"`
	listScript = missingCheck + notDirCheck +
		`{ e=$(LC_ALL=C find -H "$1" -mindepth 1 -maxdepth "$2" -printf '` + entryFormat + `' 2>&1 >&3 3>&-); s=$?; } 3>&1` + "\n" +
		// find stopped by a signal ends it: the links' walk would go over
		// it all again. (A listing past its limit is stopped whole, the
		// script with it: fileOp.)
		`[ "$s" -gt 128 ] && exit "$s"` + "\n" +
		`{ printf '` + linkMark + `\0'; LC_ALL=C find -H "$1" -mindepth 1 -maxdepth "$2" -type l -exec sh -c '` + linkLoop + `' sh {} +; } 2>/dev/null` + "\n" +
		listVanished
	mkdirScript = `if [ -d "$1" ]; then echo "exists: $1" >&2; exit 17; fi` + "\n" +
		`if [ -e "$1" ] || [ -L "$1" ]; then echo "exists and is not a directory: $1" >&2; exit 20; fi` + "\n" +
		`mkdir -p -- "$1" && find -P "$1" -maxdepth 0 -printf '` + entryFormat + `'`
	// moveScript moves as envd's Move does (moveError): it makes the
	// destination's parents first, even for a source that is not there,
	// then renames as os.Rename, which mv -T does but for the cases it
	// answers otherwise: a destination that is a directory (mv replaces
	// an empty one), the same file (mv refuses), a directory onto a file.
	// A move across filesystems (/workspace to /tmp) copies, as mv does,
	// where rename fails (EXDEV): E2B's sandbox has one filesystem.
	moveScript = firstThere + `d=$(dirname -- "$2")` + "\n" +
		`mkdir -p -- "$d" 2>/dev/null || { there "$d"; [ -d "$a" ] || { printf '%s\n' "$a" >&2; exit 4; }; mkdir -p -- "$d" || exit; }` + "\n" +
		`if ! { [ -e "$1" ] || [ -L "$1" ]; }; then there "$(dirname -- "$1")"; [ -d "$a" ] && exit 2; exit 20; fi` + "\n" +
		`if [ -d "$2" ] && [ ! -L "$2" ]; then exit 17; fi` + "\n" +
		`if [ "$1" = "$2" ] || { [ ! -L "$1" ] && [ ! -L "$2" ] && [ "$1" -ef "$2" ]; }; then :` + "\n" +
		`elif [ -d "$1" ] && [ ! -L "$1" ] && { [ -e "$2" ] || [ -L "$2" ]; }; then exit 20` + "\n" +
		`else m=$(LC_ALL=C mv -T -- "$1" "$2" 2>&1) || { case $m in *' to a subdirectory of itself, '*) exit 22 ;; esac; printf '%s\n' "$m" >&2; exit 1; }; fi` + "\n" +
		`{ e=$(LC_ALL=C find -P "$2" -maxdepth 0 -printf '` + entryFormat + `' 2>&1 >&3 3>&-); s=$?; } 3>&1` + "\n" +
		`[ "$s" -eq 0 ] && exit 0` + "\n" +
		movedAway
	// rmScript removes as envd's os.RemoveAll does: a path that is not
	// there is already removed, so remove succeeds (rm -f), as E2B's does.
	rmScript = `rm -rf -- "$1"`
)

// missingCheck ends the list script when $1 is not there: envd's ListDir
// resolves the path's symlinks first (filepath.EvalSymlinks, dir.go's
// followSymlink) and answers not_found "path not found: lstat <the first
// part that is not there, symlinks before it resolved>: no such file or
// directory", so the script walks the resolved path (realpath -m) to that
// part and writes "lstat P: no such file or directory" to stderr, P in
// the workspace "./…" as linkLoop writes one ("not a directory" when the
// part before it is a file), and exits exitNotFound. A symlink that
// leads nowhere is walked to its target's missing part, as envd's is.
const missingCheck = `[ -e "$1" ] || { r=$(realpath -m -- "$1" && echo .) || { printf 'lstat %s: no such file or directory' "$1" >&2; exit 2; }; ` +
	`r=${r%??}; rest=${r#/}; p=; why='no such file or directory'; ` +
	`while :; do c=${rest%%/*}; q=$p/$c; ` +
	`if ! [ -e "$q" ] && ! [ -L "$q" ]; then [ -z "$p" ] || [ -d "$p" ] || why='not a directory'; p=$q; break; fi; ` +
	`p=$q; [ "$rest" = "$c" ] && break; rest=${rest#*/}; done; ` +
	`w=$(pwd -P); case $p in "$w") p=. ;; "$w"/*) p=".${p#"$w"}" ;; esac; printf 'lstat %s: %s' "$p" "$why" >&2; exit 2; }` + "\n"

// notDirCheck ends the list script when $1 is not a directory: envd's
// ListDir resolves the path's symlinks first and answers invalid_argument
// "path is not a directory: <resolved path>" (dir.go, checkIfDirectory),
// so the script writes that path to stderr, as linkLoop writes one (in the
// workspace "./…"), and exits exitNotDir; a symlink that leads nowhere is
// not found, as envd's symlink resolution answers it.
const notDirCheck = `[ -d "$1" ] || { r=$(realpath -e -- "$1" 2>/dev/null && echo .); r=${r%??}; ` +
	`[ -n "$r" ] || { echo "no such file or directory: $1" >&2; exit 2; }; ` +
	`w=$(pwd -P); case $r in "$w") r=. ;; "$w"/*) r=".${r#"$w"}" ;; esac; printf '%s' "$r" >&2; exit 20; }` + "\n"

// firstThere defines there, which sets a to the deepest of its path and
// the path's parents that is there (stat: its symlinks followed). A part
// that is there and is no directory is then the first such from the
// root, which is what envd's EnsureDirs and the kernel's lookup stop at.
const firstThere = `there() { a=$1; while [ ! -e "$a" ]; do a=$(dirname -- "$a"); done; }` + "\n"

// movedAway ends the move script when find could not describe the
// destination: removed (or moved on) by another process right after the
// move, which was an internal error. The move itself was done; the answer
// is not_found about the destination, with what happened.
const movedAway = `printf '%s\n' "$e" >&2` + "\n" +
	`case $e in *': No such file or directory') exit 3 ;; esac` + "\n" +
	`exit "$s"`

// listVanished ends the list script: find fails when an entry it listed
// is gone before it stats it or a directory before it descends into it (a
// build's temporary files, a `rm -rf` under way), which made ListDir an
// internal error. Such an entry is left out, as a listing gives what one
// read of the directory saw (find's -ignore_readdir_race is GNU's and
// covers files only); any other error of find still fails.
const listVanished = `[ "$s" -eq 0 ] && exit 0` + "\n" +
	`printf '%s\n' "$e" | grep -qv ': No such file or directory$' || exit 0` + "\n" +
	`printf '%s\n' "$e" >&2; exit "$s"`

// Stat describes one path.
func (s filesystemService) Stat(ctx context.Context, req *connect.Request[filesystem.StatRequest]) (*connect.Response[filesystem.StatResponse], error) {
	p := absPath(req.Msg.GetPath())
	out, release, err := s.fileOp(ctx, "stat", p, statScript, maxEntryOutput, map[string]any{"path": p, "interface": "e2b"}, p)
	defer untilAnswered(ctx, release)
	if err != nil {
		return nil, err
	}
	entry, err := oneEntry(p, out)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.StatResponse{Entry: entry}), nil
}

// ListDir lists a directory to the given depth (1: its entries only).
func (s filesystemService) ListDir(ctx context.Context, req *connect.Request[filesystem.ListDirRequest]) (*connect.Response[filesystem.ListDirResponse], error) {
	p := absPath(req.Msg.GetPath())
	depth := max(req.Msg.GetDepth(), 1)
	depth = min(depth, maxListDepth)
	out, release, err := s.fileOp(ctx, "ls", p, listScript, maxListOutput, map[string]any{"path": p, "depth": depth, "interface": "e2b"}, p, strconv.Itoa(int(depth)))
	defer untilAnswered(ctx, release) // the entries are parsed from out, and marshalled after the return
	if err != nil {
		return nil, err
	}
	entries, err := parseEntries(p, out)
	if err != nil {
		return nil, err
	}
	sortEntries(entries)
	return connect.NewResponse(&filesystem.ListDirResponse{Entries: entries}), nil
}

// sortEntries puts a listing in envd's order: it walks the directory with
// filepath.WalkDir, so each directory's entries come by name (bytewise)
// and a directory's contents right after it. find gives them in the
// order the directory happens to hold them.
func sortEntries(entries []*filesystem.EntryInfo) {
	slices.SortFunc(entries, func(a, b *filesystem.EntryInfo) int {
		return slices.Compare(strings.Split(a.GetPath(), "/"), strings.Split(b.GetPath(), "/"))
	})
}

// maxListDepth bounds ListDir's depth.
const maxListDepth = 64

// MakeDir creates a directory and its parents; already_exists if the
// directory exists (the SDK then returns false), invalid_argument if the
// path is something else, as E2B answers (it was already_exists, so
// makeDir of a file's path returned false, as if the directory were there).
func (s filesystemService) MakeDir(ctx context.Context, req *connect.Request[filesystem.MakeDirRequest]) (*connect.Response[filesystem.MakeDirResponse], error) {
	p := absPath(req.Msg.GetPath())
	out, release, err := s.fileOp(ctx, "make_dir", p, mkdirScript, maxEntryOutput, map[string]any{"path": p, "interface": "e2b"}, p)
	defer untilAnswered(ctx, release)
	if err != nil {
		return nil, err
	}
	entry, err := oneEntry(p, out)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.MakeDirResponse{Entry: entry}), nil
}

// Move renames source to destination, replacing a file there, creating
// the destination's parents.
func (s filesystemService) Move(ctx context.Context, req *connect.Request[filesystem.MoveRequest]) (*connect.Response[filesystem.MoveResponse], error) {
	src, dst := absPath(req.Msg.GetSource()), absPath(req.Msg.GetDestination())
	out, release, err := s.fileOp(ctx, "move", src, moveScript, maxEntryOutput, map[string]any{"path": src, "destination": dst, "interface": "e2b"}, src, dst)
	defer untilAnswered(ctx, release)
	if errors.Is(err, errGoneAfter) {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("path '%s' was moved to '%s', which was removed before it could be read", src, dst))
	}
	if err != nil {
		return nil, err
	}
	entry, err := oneEntry(dst, out)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.MoveResponse{Entry: entry}), nil
}

// Remove deletes a path, a directory with everything in it; a path that
// is not there is success, as in envd (filesystem/remove.go: os.RemoveAll).
func (s filesystemService) Remove(ctx context.Context, req *connect.Request[filesystem.RemoveRequest]) (*connect.Response[filesystem.RemoveResponse], error) {
	p := absPath(req.Msg.GetPath())
	_, release, err := s.fileOp(ctx, "remove", p, rmScript, maxEntryOutput, map[string]any{"path": p, "interface": "e2b"}, p)
	release()
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.RemoveResponse{}), nil
}

func oneEntry(asked, out string) (*filesystem.EntryInfo, error) {
	entries, err := parseEntries(asked, out)
	if err != nil {
		return nil, err
	}
	if len(entries) != 1 {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("stat answered %d entries", len(entries)))
	}
	return entries[0], nil
}

// parseEntries reads find's output in entryFormat, with the records of its
// links after linkMark, about the path asked (whose form, /home/user or
// /workspace, its paths take).
func parseEntries(asked, out string) ([]*filesystem.EntryInfo, error) {
	fields := strings.Split(out, "\x00")
	fields = fields[:len(fields)-1] // what follows the last NUL: nothing
	links := map[string]linkInfo{}
	for i := 0; i < len(fields); i += entryFields {
		if fields[i] != linkMark { // a type letter, never linkMark
			continue
		}
		recs := fields[i+1:]
		if len(recs)%linkFields != 0 {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("unexpected link records of %d fields", len(recs)))
		}
		for r := range slices.Chunk(recs, linkFields) {
			links[r[0]] = linkInfo{typ: r[1], resolved: r[2]}
		}
		fields = fields[:i]
		break
	}
	if len(fields)%entryFields != 0 {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("unexpected listing of %d fields", len(fields)))
	}
	var entries []*filesystem.EntryInfo
	for f := range slices.Chunk(fields, entryFields) {
		e, err := entryOf(asked, f, links[f[7]])
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// entryOf builds an EntryInfo from find's fields as envd reports one
// (shared/pkg/filesystem GetEntryInfo): Mode is the permission bits only
// (fs.FileMode.Perm, 0o755 for a directory) and Permissions the Go
// FileMode's String ("drwxr-xr-x", "dtrwxrwxrwx" for /tmp, "Lrwxrwxrwx").
// Mode was a whole Go FileMode, type bits and all (2147484141 for a
// directory), and Permissions find's ("drwxrwxrwt").
func entryOf(asked string, f []string, link linkInfo) (*filesystem.EntryInfo, error) {
	size, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("size %q: %w", f[1], err)
	}
	bits, err := strconv.ParseUint(f[2], 8, 32)
	if err != nil {
		return nil, fmt.Errorf("mode %q: %w", f[2], err)
	}
	mtime, err := parseEpoch(f[5])
	if err != nil {
		return nil, err
	}
	mode := goMode(f[0], bits)
	p := asAsked(asked, fromWorkspace(f[7]))
	e := &filesystem.EntryInfo{
		Name: path.Base(p), Type: fileType(f[0]), Path: p, Size: size, Mode: uint32(mode.Perm()), Permissions: mode.String(),
		Owner: f[3], Group: f[4], ModifiedTime: timestamppb.New(mtime),
	}
	if f[0] == "l" {
		link.describe(e, asked)
	}
	return e, nil
}

// fileType is the envd type of find's type letter (%y): a file, a
// directory, else unspecified (a device, a socket; a symlink is
// described by what it points to).
func fileType(letter string) filesystem.FileType {
	switch letter {
	case "f":
		return filesystem.FileType_FILE_TYPE_FILE
	case "d":
		return filesystem.FileType_FILE_TYPE_DIRECTORY
	}
	return filesystem.FileType_FILE_TYPE_UNSPECIFIED
}

// linkInfo is what a link points to: "%y %m" of it, and its resolved
// path ("" when it dangles or loops).
type linkInfo struct{ typ, resolved string }

// describe sets a symlink's entry as envd's GetEntryInfo does: the type
// and permission bits of what it points to, and as its target the
// resolved absolute path (filepath.EvalSymlinks); a link that dangles
// or loops has no type, mode 0 and its own path as its target (and the
// SDK's list leaves it out). Its permissions, size and time stay the
// link's own. It was type symlink, mode 0o777 and the link's text.
func (l linkInfo) describe(e *filesystem.EntryInfo, asked string) {
	e.Type, e.Mode = filesystem.FileType_FILE_TYPE_UNSPECIFIED, 0
	target := e.GetPath()
	letter, octal, _ := strings.Cut(l.typ, " ")
	if bits, err := strconv.ParseUint(octal, 8, 32); err == nil && l.resolved != "" {
		e.Type, e.Mode = fileType(letter), uint32(goMode(letter, bits).Perm())
		target = asAsked(asked, fromWorkspace(l.resolved))
	}
	e.SymlinkTarget = &target
}

// goMode is the Go FileMode of find's type letter (%y) and octal mode
// bits (%m).
func goMode(typ string, bits uint64) fs.FileMode {
	mode := fs.FileMode(bits) & fs.ModePerm
	for bit, m := range map[uint64]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if bits&bit != 0 {
			mode |= m
		}
	}
	switch typ {
	case "d":
		mode |= fs.ModeDir
	case "l":
		mode |= fs.ModeSymlink
	case "p":
		mode |= fs.ModeNamedPipe
	case "s":
		mode |= fs.ModeSocket
	case "c":
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case "b":
		mode |= fs.ModeDevice
	}
	return mode
}

// parseEpoch reads find's %T@, seconds since the epoch with a fraction of
// up to ten digits, to the nanosecond (a float64 would lose them).
func parseEpoch(s string) (time.Time, error) {
	whole, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("mtime %q: %w", s, err)
	}
	frac = (frac + "000000000")[:9]
	nsec, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("mtime %q: %w", s, err)
	}
	return time.Unix(sec, nsec).UTC(), nil
}
