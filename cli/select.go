package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

// sandboxLister is what resolving a sandbox reference needs; *client.Client has it.
type sandboxLister interface {
	ListSandboxes(ctx context.Context, activeOnly bool) ([]api.Sandbox, error)
}

// sandboxPicker can also create the sandbox that local mode makes on demand.
type sandboxPicker interface {
	sandboxLister
	CreateSandbox(ctx context.Context, req api.CreateSandboxRequest) (*api.Sandbox, error)
}

// exactSandbox finds the sandbox of sbs whose id or label is ref; ok is
// false when none is. A label several have is a usage error that lists them.
func exactSandbox(sbs []api.Sandbox, ref string) (sb api.Sandbox, ok bool, err error) {
	var labelled []api.Sandbox
	for _, sb := range sbs {
		if sb.ID == ref {
			return sb, true, nil
		}
		if sb.Label != "" && sb.Label == ref {
			labelled = append(labelled, sb)
		}
	}
	switch len(labelled) {
	case 0:
		return api.Sandbox{}, false, nil
	case 1:
		return labelled[0], true, nil
	}
	return api.Sandbox{}, false, ambiguous(ref, labelled)
}

// prefixSandbox finds the one sandbox of sbs whose id or label begins with
// ref. Several are a usage error that lists them; none is a not-found error.
func prefixSandbox(sbs []api.Sandbox, ref string) (api.Sandbox, error) {
	var prefixed []api.Sandbox
	for _, sb := range sbs {
		if strings.HasPrefix(sb.ID, ref) || (sb.Label != "" && strings.HasPrefix(sb.Label, ref)) {
			prefixed = append(prefixed, sb)
		}
	}
	switch len(prefixed) {
	case 1:
		return prefixed[0], nil
	case 0:
		return api.Sandbox{}, &notFoundError{
			err:  fmt.Errorf("sandbox %s not found", ref),
			hint: "list sandboxes with 'boxkite session ls --all'",
		}
	}
	return api.Sandbox{}, ambiguous(ref, prefixed)
}

func ambiguous(ref string, sbs []api.Sandbox) error {
	return usageErrorf("use more of the id, or a label that only one sandbox has",
		"%q matches %d sandboxes: %s", ref, len(sbs), describeSandboxes(sbs))
}

// describedSandboxes is how many sandboxes a message names: with hundreds
// active, naming them all made one line of kilobytes that buried the hint.
const describedSandboxes = 5

// describeSandboxes lists sandboxes as "id (label), id" for messages, the
// first describedSandboxes of them and how many more there are.
func describeSandboxes(sbs []api.Sandbox) string {
	n := min(len(sbs), describedSandboxes)
	parts := make([]string, n, n+1)
	for i, sb := range sbs[:n] {
		parts[i] = sb.ID
		if sb.Label != "" {
			parts[i] += " (" + sb.Label + ")"
		}
	}
	if more := len(sbs) - n; more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(parts, ", ")
}

// sandboxArg is the start of a command on one sandbox: whether it prints
// JSON (out), the client, and the sandbox ref names (resolveSandbox).
func sandboxArg(cmd *cobra.Command, app *App, out *outputFlags, ref string, wantActive bool) (bool, *client.Client, api.Sandbox, error) {
	asJSON, c, err := jsonClient(cmd, app, out)
	if err != nil {
		return false, nil, api.Sandbox{}, err
	}
	sb, err := resolveSandbox(cmd.Context(), c, ref, wantActive)
	return asJSON, c, sb, err
}

// jsonTarget is jsonClient and the sandbox ref names, or the one to pick
// (target, never creating one).
func jsonTarget(cmd *cobra.Command, app *App, out *outputFlags, ref string) (bool, *client.Client, api.Sandbox, error) {
	asJSON, err := out.wantJSON(cmd)
	if err != nil {
		return false, nil, api.Sandbox{}, err
	}
	c, sb, err := target(cmd.Context(), app, ref, false)
	return asJSON, c, sb, err
}

// jsonLogSandbox is jsonClient and the sandbox whose log a command reads
// (logSandbox).
func jsonLogSandbox(cmd *cobra.Command, app *App, out *outputFlags, ref string) (bool, *client.Client, api.Sandbox, error) {
	asJSON, err := out.wantJSON(cmd)
	if err != nil {
		return false, nil, api.Sandbox{}, err
	}
	c, sb, err := logSandbox(cmd.Context(), app, ref)
	return asJSON, c, sb, err
}

// jsonClient is what most commands start with: whether to print JSON
// (out's --json), and the client of the selected context.
func jsonClient(cmd *cobra.Command, app *App, out *outputFlags) (bool, *client.Client, error) {
	asJSON, err := out.wantJSON(cmd)
	if err != nil {
		return false, nil, err
	}
	c, err := app.Client()
	if err != nil {
		return false, nil, err
	}
	return asJSON, c, nil
}

// resolveSandbox turns a reference into a sandbox. An exact id or label
// comes first, whatever the sandbox's state, then a prefix; each is tried
// among the active sandboxes first, so a label or prefix shared with a
// destroyed one is not ambiguous. A paused sandbox's label is therefore
// never taken for the prefix of an active one's id ('session rm dead' of a
// paused sandbox labelled dead removes it, not an active dead0f…). With
// wantActive, a reference that only matches an inactive sandbox is an
// error that says so, rather than a confusing "not found".
func resolveSandbox(ctx context.Context, l sandboxLister, ref string, wantActive bool) (api.Sandbox, error) {
	if ref == "" { // a prefix of every id: never a choice ('session get ""' used to show the only one)
		return api.Sandbox{}, usageErrorf("name a sandbox by id, unique id prefix or label ('boxkite session ls' lists them)", "the sandbox to use is empty")
	}
	all, err := l.ListSandboxes(ctx, false)
	if err != nil {
		return api.Sandbox{}, fmt.Errorf("list sandboxes: %w", err)
	}
	var active []api.Sandbox
	for _, sb := range all {
		if sb.Status == api.StatusActive {
			active = append(active, sb)
		}
	}
	sb, err := resolveAmong(active, all, ref)
	if err != nil || sb.Status == api.StatusActive {
		return sb, err
	}
	if wantActive && sb.Status == api.StatusPaused {
		return sb, &hintError{
			err:  fmt.Errorf("sandbox %s is paused (%s)", sb.ID, sb.PausedWith),
			hint: "resume it with 'boxkite session resume " + sb.ID + "'",
		}
	}
	if wantActive {
		return sb, &hintError{
			err:  fmt.Errorf("sandbox %s is %s", sb.ID, sb.Status),
			hint: "create a new one with 'boxkite session create'",
		}
	}
	return sb, nil
}

// resolveAmong finds ref as an exact id or label among active, then among
// all, then as a prefix among active, then among all.
func resolveAmong(active, all []api.Sandbox, ref string) (api.Sandbox, error) {
	for _, sbs := range [][]api.Sandbox{active, all} {
		if sb, ok, err := exactSandbox(sbs, ref); ok || err != nil {
			return sb, err
		}
	}
	sb, err := prefixSandbox(active, ref)
	if _, notFound := errors.AsType[*notFoundError](err); !notFound {
		return sb, err
	}
	return prefixSandbox(all, ref)
}

// pickSandbox chooses the sandbox for a per-sandbox command: ref when given,
// else the only active sandbox. In local mode, when none is active, it
// creates one and says so on stderr.
func pickSandbox(ctx context.Context, p sandboxPicker, ref string, local bool, stderr io.Writer) (api.Sandbox, error) {
	if ref != "" {
		return resolveSandbox(ctx, p, ref, true)
	}
	active, err := p.ListSandboxes(ctx, true)
	if err != nil {
		return api.Sandbox{}, fmt.Errorf("list sandboxes: %w", err)
	}
	switch {
	case len(active) == 1:
		return active[0], nil
	case len(active) > 1:
		return api.Sandbox{}, usageErrorf("pass --sandbox ID (a unique prefix of the id, or the label, is enough); 'boxkite session ls' lists them",
			"%d sandboxes are active: %s", len(active), describeSandboxes(active))
	case !local:
		return api.Sandbox{}, &notFoundError{
			err:  errors.New("no active sandbox"),
			hint: "create one with 'boxkite session create'",
		}
	}
	sb, err := p.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		return api.Sandbox{}, fmt.Errorf("create sandbox: %w", err)
	}
	fmt.Fprintf(stderr, "created sandbox %s\n", sb.ID)
	return *sb, nil
}
