package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
)

// agentImage returns the image a handoff's sandbox boots from: the one
// named with --image, else the agent's own, built from its npm package
// on first use and reused after (the server answers an identical recipe
// with the image it already has). "" means the server's default image:
// a server without images (the kube driver) must provide the agent there.
func agentImage(ctx context.Context, stdio IO, c *client.Client, agent handoff.Agent, version, image string) (string, error) {
	if image != "" {
		return image, nil
	}
	spec := agent.ImageSpec(version)
	img, err := c.CreateImage(ctx, api.CreateImageRequest{Label: agent.ImageLabel(version), ImageSpec: spec})
	if e, ok := errors.AsType[*api.Error](err); ok && (e.Code == api.CodeNotSupported || e.Status == 404) {
		fmt.Fprintf(stdio.ErrOut, "warning: this server builds no images; the sandbox's image must have %s\n", agent.CLI)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("build the %s image: %w", agent.Tool, err)
	}
	if img.Status != api.ImageCompleted {
		if img, err = buildAgentImage(ctx, stdio, c, agent, img, spec); err != nil {
			return "", err
		}
	}
	return img.ID, nil
}

// buildAgentImage waits for the agent image's build, showing it: on a
// terminal one line redrawn with the time taken and the build log's last
// line, otherwise a line when it starts and when it ends.
func buildAgentImage(ctx context.Context, stdio IO, c *client.Client, agent handoff.Agent, img *api.Image, spec api.ImageSpec) (*api.Image, error) {
	what := fmt.Sprintf("the %s image (npm %s; first use, later handoffs reuse it)", agent.Tool, strings.Join(spec.NPMPackages, " "))
	fmt.Fprintf(stdio.ErrOut, "building %s\n", what)
	start := time.Now()
	var progress io.Writer = io.Discard
	var line *buildLine
	if stdio.ErrTTY {
		line = &buildLine{w: stdio.ErrOut, start: start, id: img.ID}
		progress = line
		stop := line.tick()
		defer stop()
		defer line.end() // an interrupt's error starts a line of its own
	}
	if err := c.ImageLogs(ctx, img.ID, true, progress); err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("build %s: %w", what, ctx.Err())
	}
	if line != nil {
		line.end()
	}
	img, err := waitImage(ctx, io.Discard, c, img)
	if err != nil {
		return nil, err
	}
	if img.Status == api.ImageFailed {
		return nil, &hintError{
			err:  fmt.Errorf("the %s image %s failed to build: %s", agent.Tool, img.ID, img.FailureReason),
			hint: fmt.Sprintf("'boxkite images logs %s' shows the build; pass --image ID to use an image that has %s", img.ID, agent.CLI),
		}
	}
	fmt.Fprintf(stdio.ErrOut, "built image %s in %s\n", img.ID, time.Since(start).Round(time.Second))
	return img, nil
}

// buildLine redraws one status line from the build log it is written.
type buildLine struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	id    string
	last  string // the log's last complete line
	part  []byte // an incomplete line
	done  bool
}

func (b *buildLine) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.part = append(b.part, p...)
	for {
		i := bytes.IndexByte(b.part, '\n')
		if i < 0 {
			break
		}
		if l := strings.TrimSpace(string(b.part[:i])); l != "" {
			b.last = l
		}
		b.part = b.part[i+1:]
	}
	b.draw()
	return len(p), nil
}

// tick redraws every second, so the time moves while the log is quiet.
func (b *buildLine) tick() func() {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				b.mu.Lock()
				b.draw()
				b.mu.Unlock()
			}
		}
	}()
	return sync.OnceFunc(func() { close(stop) })
}

// draw writes the line; b.mu is held.
func (b *buildLine) draw() {
	if b.done {
		return
	}
	line := fmt.Sprintf("image %s: %s", b.id, time.Since(b.start).Round(time.Second))
	if b.last != "" {
		line += " · " + b.last
	}
	if r := []rune(line); len(r) > 100 {
		line = string(r[:99]) + "…"
	}
	fmt.Fprintf(b.w, "\r%s\x1b[K", line)
}

func (b *buildLine) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.done = true
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}

// checkAgent runs the agent's --version in the sandbox, before anything
// moves: a sandbox without a working agent is no place to resume in.
func checkAgent(ctx context.Context, c *client.Client, id string, agent handoff.Agent) (string, error) {
	res, err := c.Exec(ctx, id, api.ExecRequest{Command: agent.CLI + " --version", Timeout: 120})
	if err != nil {
		return "", fmt.Errorf("run %s --version in sandbox %s: %w", agent.CLI, id, err)
	}
	out := strings.TrimSpace(res.Stdout)
	if res.ExitCode != 0 || out == "" {
		said := strings.TrimSpace(res.Stderr + "\n" + res.Stdout)
		if said == "" {
			said = fmt.Sprintf("exit status %d", res.ExitCode)
		}
		return "", &hintError{
			err: fmt.Errorf("%s does not run in sandbox %s: %s", agent.CLI, id, firstLines(said, 3)),
			hint: fmt.Sprintf("hand off into an image that has it: leave out --image and -s to use the %s image boxkite builds, or build one with 'boxkite images build --npm-package %s==%s'",
				agent.Tool, agent.Package, agent.Version),
		}
	}
	return firstLines(out, 1), nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}
