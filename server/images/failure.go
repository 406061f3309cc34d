//go:build linux

package images

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// A buildFailure says why a build or an import failed, in an
// api.CodeImageBuild* or api.CodeImageImport* code, and what to do about
// it; finish records both with the image.
type buildFailure struct {
	code, msg, hint string
	err             error // the step's or the jail's own error
}

func (f *buildFailure) Error() string { return f.msg }
func (f *buildFailure) Unwrap() error { return f.err }

// failure explains a failed build: the server stopping it, else a refused
// connection, the likeliest cause (a package that downloads from
// elsewhere fails when it cannot), then a refused write, else the failing
// step.
func failure(id string, err error, refused []string, out outputSeen) *buildFailure {
	var disk errBuildDisk
	switch {
	case errors.Is(err, errStopped):
		return &buildFailure{code: api.CodeImageBuildFailed, err: err, msg: errStopped.Error(), hint: "run the same build again: a failed image is never reused"}
	case len(refused) > 0:
		return &buildFailure{
			code: api.CodeImageBuildEgressRefused, err: err,
			msg: fmt.Sprintf("the build tried to reach %s, not a package source of this server", strings.Join(refused, ", ")),
			hint: "a build reaches only the package sources configured on this machine (apt's sources, pip's index, npm's registry); " +
				"a package that downloads from elsewhere while it installs cannot be built here; every connection it tried is in `boxkite images audit " + id + "`",
		}
	case out.readOnly != "":
		return &buildFailure{
			code: api.CodeImageBuildWriteRefused, err: err,
			msg: "a package tried to write outside the image's directories: " + out.readOnly,
			hint: "install scripts may write under /usr, /etc, /bin, /sbin, /lib* and the scratch directories /tmp, /var/tmp, /var/log and /run; " +
				"a package that installs elsewhere (/opt, /home, /root) cannot be built here",
		}
	case errors.As(err, &disk):
		return &buildFailure{
			code: api.CodeImageBuildFailed, err: err, msg: err.Error(),
			hint: "an image may hold at most " + sizeText(disk.limit) + " of packages: build fewer or smaller ones; `boxkite images logs " + id + "` shows what it installed",
		}
	case errors.As(err, new(errBuildTimeout)):
		return &buildFailure{
			code: api.CodeImageBuildFailed, err: err, msg: err.Error(),
			hint: "see where it hung in the build log: `boxkite images logs " + id + "`; a package whose install waits for input or a network it cannot reach never finishes here",
		}
	default:
		why := err.Error()
		if out.stepFailed != "" {
			why = out.stepFailed
		}
		return &buildFailure{
			code: api.CodeImageBuildFailed, err: err,
			msg:  "the build failed: " + why,
			hint: "see what failed in the build log: `boxkite images logs " + id + "`",
		}
	}
}

// importHint is a failed import's hint when its archive is at fault.
const importHint = "import takes an OCI image layout tar or a `docker save` archive (.tar or .tar.gz) of a Linux image, " +
	"e.g. `docker save python:3.12-slim > py.tar`; a failed image is never reused: import it again"

// importFailure explains a failed import (nil for none): its files too
// many for limit, the host's disk full or failing, else the archive, which
// is not an image or holds what an image may not (a name that leaves the
// root, a link out of it, a corrupt layer).
func importFailure(err error, limit int64) error {
	if err == nil {
		return nil
	}
	var size errImportSize
	switch {
	case errors.As(err, &size):
		return &buildFailure{
			code: api.CodeImageImportTooBig, err: err, msg: err.Error(),
			hint: "an image may hold at most " + sizeText(limit) + " of files: import a smaller one (fewer layers' files, no caches)",
		}
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &buildFailure{
			code: api.CodeImageImportDiskFull, err: err, msg: "the host's disk filled while the image was extracted: " + err.Error(),
			hint: "free space on the host (remove images, sandboxes, snapshots and volumes you no longer need), then import it again",
		}
	case hostFault(err):
		return &buildFailure{
			code: api.CodeImageImportFailed, err: err, msg: "the server could not extract the image: " + err.Error(),
			hint: "import it again; if it fails the same way, the server log has the cause under the image's id",
		}
	}
	return &buildFailure{code: api.CodeImageImportBadArchive, err: err, msg: err.Error(), hint: importHint}
}

// hostFault reports whether err is the host's failing, not the archive's
// content: a disk that fails or went read-only, memory or descriptors
// running out. What an archive can cause (a file where a directory
// goes, a directory it made unreadable) is the archive's.
func hostFault(err error) bool {
	for _, e := range []syscall.Errno{syscall.EIO, syscall.EROFS, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// outputSeen is what a build's output told of its failure.
type outputSeen struct {
	readOnly   string // the first line saying a write met a read-only filesystem
	stepFailed string // init's line naming the failed step (jail.StepFailed)
}

// outputWatch passes a build's output on and keeps what it tells of a
// failure: a write that met a read-only filesystem (an install script
// writing outside the image's directories, whose failure the build
// reports as such) and the step that failed.
type outputWatch struct {
	w    io.Writer
	line []byte // the current line so far, at most maxWatchedLine bytes
	seen outputSeen
}

const maxWatchedLine = 512

func (o *outputWatch) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != '\n' {
			if len(o.line) < maxWatchedLine {
				o.line = append(o.line, c)
			}
			continue
		}
		o.check()
	}
	return o.w.Write(p)
}

func (o *outputWatch) check() {
	line := strings.TrimSpace(string(o.line))
	o.line = o.line[:0]
	switch {
	case o.seen.readOnly == "" && (strings.Contains(line, "EROFS") || strings.Contains(strings.ToLower(line), "read-only file system")):
		o.seen.readOnly = line
	case strings.HasPrefix(line, jail.StepFailedPrefix):
		o.seen.stepFailed = line
	}
}

// maxBuildLog bounds what an image's build.log keeps of the steps' output
// and the proxy's lines: a step that prints without end would otherwise
// fill the host's disk before the build timeout stops it.
const maxBuildLog = 16 << 20

// cappedLog writes the first left bytes to w, then one line saying the
// rest was dropped; it reports every write as whole, so the build goes on.
type cappedLog struct {
	w    io.Writer
	left int
	cut  bool
}

func (c *cappedLog) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > c.left {
		p = p[:c.left]
	}
	c.left -= len(p)
	if _, err := c.w.Write(p); err != nil {
		return n, err
	}
	if c.left == 0 && !c.cut && len(p) < n {
		c.cut = true
		_, err := fmt.Fprintf(c.w, "\n[build log truncated: it keeps the first %d MiB of the build's output]\n", maxBuildLog>>20)
		return n, err
	}
	return n, nil
}
