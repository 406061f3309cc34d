package handoff

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// A second handoff into the same sandbox (boxkite handoff -s) writes the
// tree and the session over what the first one sent, which the agent may
// have changed there since. The record of the first (HandoffDir's
// handoff.json) is written once everything else it sent is in place, and
// everything it sent is dated before it (tree files with their own times,
// truncated to the second, session files when their archive began), so
// a file the handoff would overwrite that is newer than the record was
// changed in the sandbox: the agent's work, which Changed finds before
// anything is sent.

// Runner runs a shell command line in the sandbox and returns its
// standard output; an exit status other than 0 is an error. The CLI binds
// the client's exec to one sandbox.
type Runner func(ctx context.Context, command string) (string, error)

// overwritesFile is where Changed leaves the paths it asks about, NUL
// separated, for the script to read; the script removes it.
const overwritesFile = "overwrites"

// changedScript prints, one a line, the paths of the list (relative to
// SandboxHome) that are regular files newer than the record; nothing
// when no handoff was made into the sandbox. xargs spares the shell an
// argument list longer than the kernel takes.
func changedScript() string {
	return fmt.Sprintf(`cd %[1]s || exit 1
m=%[2]s/handoff.json l=%[2]s/%[3]s
s=0
if [ -f "$m" ]; then
	xargs -0 sh -c 'for f do if [ -f "$f" ] && [ ! -h "$f" ] && [ "$f" -nt "$0" ]; then printf "%%s\n" "$f"; fi; done' "$m" <"$l"
	s=$?
fi
rm -f "$l"
exit $s`, shellQuote(SandboxHome), shellQuote(HandoffDir), overwritesFile)
}

// Overwrites lists, relative to SandboxHome and sorted, the regular files
// p writes over what the sandbox has at their paths: the tree's files and
// the session files it does not merge with the sandbox's copies.
func (p *Plan) Overwrites() []string {
	var out []string
	for _, rel := range p.Tree.Entries {
		if _, ok := p.Tree.data[rel]; !ok {
			if fi, err := os.Lstat(p.Tree.local(rel)); err != nil || !fi.Mode().IsRegular() {
				continue
			}
		}
		out = append(out, path.Join(p.Tree.Name, rel))
	}
	for _, f := range p.Files {
		if rel, ok := strings.CutPrefix(f.Target, SandboxHome+"/"); ok && f.Merge == nil {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Changed lists, relative to SandboxHome and sorted, the files of
// p.Overwrites() that the sandbox changed after the last handoff into
// it; none when no handoff was made into it.
func Changed(ctx context.Context, p *Plan, sb Sandbox, run Runner) ([]string, error) {
	paths := p.Overwrites()
	if len(paths) == 0 {
		return nil, nil
	}
	var list bytes.Buffer
	for _, rel := range paths {
		list.WriteString(rel)
		list.WriteByte(0)
	}
	if err := uploadHandoffDir(ctx, sb, map[string][]byte{overwritesFile: list.Bytes()}); err != nil {
		return nil, fmt.Errorf("look for files changed in the sandbox: %w", err)
	}
	out, err := run(ctx, changedScript())
	if err != nil {
		return nil, fmt.Errorf("look for files changed in the sandbox: %w", err)
	}
	var changed []string
	for line := range strings.SplitSeq(out, "\n") {
		if line != "" {
			changed = append(changed, line)
		}
	}
	slices.Sort(changed)
	return changed, nil
}
