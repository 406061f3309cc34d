package images

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// A buildFailure says why a build failed, in an api.CodeImageBuild* code,
// and what to do about it; finish records both with the image.
type buildFailure struct {
	code, msg, hint string
	err             error // the step's or the jail's own error
}

func (f *buildFailure) Error() string { return f.msg }
func (f *buildFailure) Unwrap() error { return f.err }

// failure explains a failed build: a refused connection is the likeliest
// cause (a package that downloads from elsewhere fails when it cannot),
// then a refused write, else the failing step.
func failure(id string, err error, refused []string, roLine string) *buildFailure {
	switch {
	case len(refused) > 0:
		return &buildFailure{
			code: api.CodeImageBuildEgressRefused, err: err,
			msg: fmt.Sprintf("the build tried to reach %s, not a package source of this server", strings.Join(refused, ", ")),
			hint: "a build reaches only the package sources configured on this machine (apt's sources, pip's index, npm's registry); " +
				"a package that downloads from elsewhere while it installs cannot be built here",
		}
	case roLine != "":
		return &buildFailure{
			code: api.CodeImageBuildWriteRefused, err: err,
			msg: "a package tried to write outside the image's directories: " + roLine,
			hint: "install scripts may write under /usr, /etc, /bin, /sbin, /lib* and the scratch directories /tmp, /var/tmp, /var/log and /run; " +
				"a package that installs elsewhere (/opt, /home, /root) cannot be built here",
		}
	case errors.As(err, new(errBuildTimeout)):
		return &buildFailure{
			code: api.CodeImageBuildFailed, err: err, msg: err.Error(),
			hint: "see where it hung in the build log: `boxkite images logs " + id + "`; a package whose install waits for input or a network it cannot reach never finishes here",
		}
	default:
		return &buildFailure{
			code: api.CodeImageBuildFailed, err: err,
			msg:  "the build failed: " + err.Error(),
			hint: "see what failed in the build log: `boxkite images logs " + id + "`",
		}
	}
}

// readOnlyWatch passes a build's output on and keeps the first line
// saying a write met a read-only filesystem: an install script writing
// outside the image's directories, whose failure the build reports as
// such.
type readOnlyWatch struct {
	w     io.Writer
	line  []byte // the current line so far, at most maxWatchedLine bytes
	found string // the first such line
}

const maxWatchedLine = 512

func (r *readOnlyWatch) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != '\n' {
			if len(r.line) < maxWatchedLine {
				r.line = append(r.line, c)
			}
			continue
		}
		r.check()
	}
	return r.w.Write(p)
}

func (r *readOnlyWatch) check() {
	line := strings.TrimSpace(string(r.line))
	r.line = r.line[:0]
	if r.found == "" && (strings.Contains(line, "EROFS") || strings.Contains(strings.ToLower(line), "read-only file system")) {
		r.found = line
	}
}
