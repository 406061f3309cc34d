package securitytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// The suite's size preset and quotas: small enough that the resource
// attacks hit their limits in a second or two.
const (
	testMemory    = 256 << 20
	testPids      = 256
	testTmpSize   = 64 << 20
	testStorageGB = 0.25
)

// responsiveWithin is how slow a bystander's `true` may get during an
// attack. Generous: CI machines are small and shared; a starved sandbox
// takes far longer, or never answers.
const responsiveWithin = 10 * time.Second

func TestMain(m *testing.M) {
	if mode := os.Getenv(racerEnv); mode != "" {
		os.Exit(runRacer(mode, os.Args[1:])) // uploaded into a sandbox: race_test.go
	}
	if os.Geteuid() != 0 {
		// The suite proves the root driver's jail: cgroups and loop quotas
		// need root. CI runs it as root, and fails it otherwise.
		if os.Getenv("CI") != "" {
			fmt.Println("securitytest: CI must run the security suite as root")
			os.Exit(1)
		}
		fmt.Println("securitytest: skipped, needs root")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A suite is one control plane with its local driver.
type suite struct {
	t testing.TB
	s *servertest.Server
	c *client.Client
}

// newSuite starts the suite's control plane; edits change its driver's
// configuration further.
func newSuite(t testing.TB, edits ...func(*local.Config)) *suite {
	t.Helper()
	return newSuiteConfig(t, server.Config{}, edits...)
}

// newSuiteConfig is newSuite with the control plane's configuration cfg.
func newSuiteConfig(t testing.TB, cfg server.Config, edits ...func(*local.Config)) *suite {
	t.Helper()
	s := servertest.New(t, servertest.WithConfig(cfg), servertest.WithDriverConfig(func(c *local.Config) {
		c.Sizes = map[string]jail.Limits{
			api.SizeSmall:  {CPUs: 1, Memory: testMemory},
			api.SizeMedium: {CPUs: 1, Memory: 2 * testMemory},
			api.SizeLarge:  {CPUs: 2, Memory: 4 * testMemory},
		}
		c.PidsLimit = testPids
		c.TmpSize = testTmpSize
		c.StorageGB = testStorageGB
		for _, edit := range edits {
			edit(c)
		}
	}))
	return &suite{t: t, s: s, c: client.New(s.BaseURL, s.APIKey)}
}

// sandbox creates a sandbox through the API.
func (x *suite) sandbox(req api.CreateSandboxRequest) string {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := x.c.CreateSandbox(ctx, req)
	if err != nil {
		x.t.Fatalf("create sandbox: %v", err)
	}
	return sb.ID
}

// exec runs req in sandbox id and returns the result or the API error.
func (x *suite) exec(id string, req api.ExecRequest) (*api.ExecResult, error) {
	if req.Timeout == 0 {
		req.Timeout = 30
	}
	return x.c.Exec(context.Background(), id, req)
}

// run runs command in sandbox id; a failed call (not a failed command)
// ends the test.
func (x *suite) run(id, command string) api.ExecResult {
	x.t.Helper()
	res, err := x.exec(id, api.ExecRequest{Command: command})
	if err != nil {
		x.t.Fatalf("exec %q: %v", command, err)
	}
	return *res
}

// host is what the host knows of a sandbox: its driver's state.json.
type host struct {
	dir    string // StateDir/sandboxes/<id>
	PID    int    `json:"pid"`
	Token  string `json:"token"`
	Cgroup struct {
		Dirs []string `json:"dirs"`
	} `json:"cgroup"`
	HostIDBase int `json:"host_id_base"` // the sandbox's own host id range
}

func (x *suite) host(id string) host {
	x.t.Helper()
	h := host{dir: filepath.Join(x.s.StateDir, "sandboxes", id)}
	b, err := os.ReadFile(filepath.Join(h.dir, "state.json"))
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	if err != nil {
		x.t.Fatalf("read state of %s: %v", id, err)
	}
	if len(h.Cgroup.Dirs) == 0 {
		x.t.Fatalf("sandbox %s has no cgroup; the suite needs cgroup limits", id)
	}
	return h
}

// cgroupFile reads a file of the sandbox's cgroup from the first hierarchy
// that has it (v1 splits controllers over hierarchies).
func (h host) cgroupFile(name string) (string, error) {
	for _, d := range h.Cgroup.Dirs {
		if b, err := os.ReadFile(filepath.Join(d, name)); err == nil {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("no cgroup of %s has %s", filepath.Base(h.dir), name)
}

// cgroupStat returns the value of key in a flat-keyed cgroup file such as
// memory.events or pids.events ("key value" lines).
func (h host) cgroupStat(file, key string) (int64, error) {
	s, err := h.cgroupFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(s, "\n") {
		var k string
		var v int64
		if _, err := fmt.Sscan(line, &k, &v); err == nil && k == key {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%s has no %s:\n%s", file, key, s)
}

// A bystander is a second sandbox running `true` again and again while an
// attack goes on in another, recording how long each took.
type bystander struct {
	x    *suite
	id   string
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	times []time.Duration
	errs  []string
}

// watch starts pinging sandbox id until check is called.
func (x *suite) watch(id string) *bystander {
	b := &bystander{x: x, id: id, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for {
			b.ping()
			select {
			case <-b.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return b
}

func (b *bystander) ping() {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), responsiveWithin)
	defer cancel()
	res, err := b.x.c.Exec(ctx, b.id, api.ExecRequest{Command: "true", Timeout: 10})
	took := time.Since(start)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.times = append(b.times, took)
	switch {
	case err != nil:
		b.errs = append(b.errs, err.Error())
	case res.ExitCode != 0:
		b.errs = append(b.errs, fmt.Sprintf("true exited %d: %s", res.ExitCode, res.Stderr))
	case took > responsiveWithin:
		b.errs = append(b.errs, fmt.Sprintf("true took %v", took))
	}
}

// check stops the pings, pings once more, and fails the test if the
// bystander was ever unresponsive.
func (b *bystander) check(t *testing.T) {
	t.Helper()
	close(b.stop)
	<-b.done
	b.ping()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errs) > 0 {
		t.Errorf("bystander sandbox unresponsive during the attack (%d of %d pings): %s", len(b.errs), len(b.times), strings.Join(b.errs, "; "))
	}
	t.Logf("bystander: %d pings, p50 %v, max %v", len(b.times), percentile(b.times, 50), slices.Max(b.times))
}

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

// eventually retries f until it returns nil or timeout passes.
func eventually(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// apiStatus returns the HTTP status of an API error, or 0.
func apiStatus(err error) int {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}
