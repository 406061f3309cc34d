package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// fakeSandboxes is a func-field fake of sandboxPicker over a fixed list.
type fakeSandboxes struct {
	list    []api.Sandbox
	created []api.CreateSandboxRequest
}

func (f *fakeSandboxes) ListSandboxes(_ context.Context, activeOnly bool) ([]api.Sandbox, error) {
	var out []api.Sandbox
	for _, sb := range f.list {
		if !activeOnly || sb.Status == api.StatusActive {
			out = append(out, sb)
		}
	}
	return out, nil
}

func (f *fakeSandboxes) CreateSandbox(_ context.Context, req api.CreateSandboxRequest) (*api.Sandbox, error) {
	f.created = append(f.created, req)
	return &api.Sandbox{ID: "new-1", Status: api.StatusActive}, nil
}

var _ sandboxPicker = (*fakeSandboxes)(nil)

func TestResolveSandbox(t *testing.T) {
	t.Parallel()
	f := &fakeSandboxes{list: []api.Sandbox{
		{ID: "3f2a9c01", Status: api.StatusActive, Label: "build"},
		{ID: "3f2b7700", Status: api.StatusActive, Label: "test"},
		{ID: "9c000000", Status: api.StatusActive, Label: "3f2a"}, // a label that looks like a prefix
		{ID: "aa110000", Status: api.StatusDestroyed, Label: "old"},
		{ID: "bb220000", Status: api.StatusActive, Label: "twin"},
		{ID: "bb330000", Status: api.StatusActive, Label: "twin"},
		{ID: "cc440000", Status: api.StatusDestroyed, Label: "scratch"},
		{ID: "cc550000", Status: api.StatusActive, Label: "scratch"},
		// A paused sandbox labelled as another's id begins (ids are hex).
		{ID: "dead0000", Status: api.StatusActive, Label: "web"},
		{ID: "ee880000", Status: api.StatusPaused, Label: "dead"},
	}}
	tests := []struct {
		ref        string
		wantActive bool
		wantID     string
		wantCode   int    // exit code of the error, 0 for none
		wantErr    string // substring
	}{
		{ref: "3f2a9c01", wantID: "3f2a9c01"},                       // exact id
		{ref: "3f2a", wantID: "9c000000"},                           // an exact label beats an id prefix
		{ref: "3f2b", wantID: "3f2b7700"},                           // unique id prefix
		{ref: "bui", wantID: "3f2a9c01"},                            // unique label prefix
		{ref: "3f", wantCode: exitUsage, wantErr: `"3f" matches 3`}, // ambiguous
		{ref: "twin", wantCode: exitUsage, wantErr: "bb220000 (twin), bb330000 (twin)"},
		{ref: "nope", wantCode: exitNotFound, wantErr: "sandbox nope not found"},
		{ref: "scratch", wantActive: true, wantID: "cc550000"}, // the active one wins
		{ref: "old", wantID: "aa110000"},                       // get may show destroyed sandboxes
		{ref: "old", wantActive: true, wantCode: exitError, wantErr: "sandbox aa110000 is destroyed"},
		// A paused sandbox's label is not taken for an active one's id
		// prefix: 'session resume dead' resumes it, 'session rm dead'
		// removes it, and 'exec -s dead' says it is paused. Before, each
		// acted on dead0000, another sandbox.
		{ref: "dead", wantID: "ee880000"},
		{ref: "dead", wantActive: true, wantCode: exitError, wantErr: "sandbox ee880000 is paused"},
		{ref: "dea", wantID: "dead0000"}, // a prefix: the active one first, as before
	}
	for _, tt := range tests {
		sb, err := resolveSandbox(context.Background(), f, tt.ref, tt.wantActive)
		if tt.wantCode != 0 {
			if err == nil || exitCode(err) != tt.wantCode || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("resolveSandbox(%q, %v) = %v, %v; want an error with exit code %d mentioning %q", tt.ref, tt.wantActive, sb.ID, err, tt.wantCode, tt.wantErr)
			}
			continue
		}
		if err != nil || sb.ID != tt.wantID {
			t.Errorf("resolveSandbox(%q, %v) = %q, %v; want %q", tt.ref, tt.wantActive, sb.ID, err, tt.wantID)
		}
	}
}

func TestPickSandbox(t *testing.T) {
	t.Parallel()
	one := []api.Sandbox{{ID: "only", Status: api.StatusActive}, {ID: "dead", Status: api.StatusDestroyed}}
	two := []api.Sandbox{{ID: "a1", Status: api.StatusActive, Label: "x"}, {ID: "b2", Status: api.StatusActive}}
	tests := []struct {
		name        string
		list        []api.Sandbox
		ref         string
		local       bool
		wantID      string
		wantCreated int
		wantStderr  string
		wantCode    int
	}{
		{name: "the only active one", list: one, wantID: "only"},
		{name: "by reference", list: two, ref: "b", wantID: "b2"},
		{name: "several active", list: two, wantCode: exitUsage},
		{name: "none, local: create", local: true, wantID: "new-1", wantCreated: 1, wantStderr: "created sandbox new-1\n"},
		{name: "none, hosted: not found", wantCode: exitNotFound},
		{name: "unknown reference", list: one, ref: "zzz", local: true, wantCode: exitNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeSandboxes{list: tt.list}
			var stderr strings.Builder
			sb, err := pickSandbox(context.Background(), f, tt.ref, tt.local, &stderr)
			if tt.wantCode != 0 {
				if got := exitCode(err); err == nil || got != tt.wantCode {
					t.Errorf("pickSandbox() error = %v (exit %d), want exit %d", err, got, tt.wantCode)
				}
			} else if err != nil || sb.ID != tt.wantID {
				t.Errorf("pickSandbox() = %q, %v; want %q", sb.ID, err, tt.wantID)
			}
			if len(f.created) != tt.wantCreated || stderr.String() != tt.wantStderr {
				t.Errorf("created %d sandboxes, stderr %q; want %d, %q", len(f.created), stderr.String(), tt.wantCreated, tt.wantStderr)
			}
		})
	}
}

func TestSeveralActiveListsThem(t *testing.T) {
	t.Parallel()
	f := &fakeSandboxes{list: []api.Sandbox{{ID: "a1", Status: api.StatusActive, Label: "x"}, {ID: "b2", Status: api.StatusActive}}}
	_, err := pickSandbox(context.Background(), f, "", true, nil)
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Error(), "a1 (x), b2") || !strings.Contains(ue.hint, "--sandbox") {
		t.Errorf("pickSandbox with two active = %v, want a usage error listing a1 (x), b2 with a --sandbox hint", err)
	}
}

// TestSeveralActiveNamesAFew: with hundreds of sandboxes active, the error
// names a few and counts the rest, where it listed every id in one line of
// kilobytes; the hint says where the whole list is.
func TestSeveralActiveNamesAFew(t *testing.T) {
	t.Parallel()
	f := &fakeSandboxes{}
	for i := range 300 {
		f.list = append(f.list, api.Sandbox{ID: fmt.Sprintf("sb%03d", i), Status: api.StatusActive})
	}
	_, err := pickSandbox(context.Background(), f, "", true, nil)
	ue, ok := errors.AsType[*usageError](err)
	if !ok {
		t.Fatalf("pickSandbox with 300 active = %v, want a usage error", err)
	}
	want := "300 sandboxes are active: sb000, sb001, sb002, sb003, sb004, and 295 more"
	if ue.Error() != want || !strings.Contains(ue.hint, "boxkite session ls") {
		t.Errorf("error %q, hint %q; want %q and a hint naming 'boxkite session ls'", ue.Error(), ue.hint, want)
	}
	_, err = resolveSandbox(context.Background(), f, "sb", false)
	if want := `"sb" matches 300 sandboxes: sb000, sb001, sb002, sb003, sb004, and 295 more`; err == nil || err.Error() != want {
		t.Errorf("resolveSandbox(sb) = %v, want %q", err, want)
	}
}

// TestCompleteSandboxLabels: completing a sandbox reference offers the
// ids that start with what is typed and the labels that do, where only
// ids were offered (so -s bu<TAB> gave nothing for a sandbox labelled
// build); a label with a space, which the shell would split, is not.
func TestCompleteSandboxLabels(t *testing.T) {
	isolate(t)
	srv := fakeAPI(t, map[string]http.HandlerFunc{"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{
		{ID: "3f2a9c01", Status: api.StatusActive, Label: "build"},
		{ID: "bu110000", Status: api.StatusActive},
		{ID: "9c000000", Status: api.StatusActive, Label: "build two"},
		{ID: "cc550000", Status: api.StatusActive, Label: "test"},
	})})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")
	for _, tt := range []struct{ args, want []string }{
		{[]string{"exec", "-s", "bu"}, []string{"bu110000", "build\t3f2a9c01"}},
		{[]string{"session", "get", "3f"}, []string{"3f2a9c01\tbuild"}},
		{[]string{"session", "rm", ""}, []string{"3f2a9c01\tbuild", "bu110000", "9c000000\tbuild two", "cc550000\ttest"}},
	} {
		r := runCLI(t, "", append([]string{"__complete"}, tt.args...)...)
		got := strings.Split(strings.TrimSpace(r.stdout), "\n")
		got = got[:len(got)-1] // the directive
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("complete %q = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// fakeRemover is fakeSandboxes whose deletes the server's rate limit
// refuses after the first allowed ones.
type fakeRemover struct {
	fakeSandboxes
	allowed, calls int
}

func (f *fakeRemover) DeleteSandbox(_ context.Context, _ string) error {
	f.calls++
	if f.calls > f.allowed {
		return &api.Error{Status: 429, Code: api.CodeRateLimited, Message: "too many requests: at most 1000 per minute (sandbox_lifecycle)", Hint: "wait 22 s and try again"}
	}
	return nil
}

// TestRemoveAllStopsAtTheRateLimit: session rm --all past the server's
// rate limit stops at the first refusal and says how many are left (exit
// 5, the server's hint), where it asked for every other sandbox and
// printed an error line for each: 188 of them removing 1187 sandboxes.
func TestRemoveAllStopsAtTheRateLimit(t *testing.T) {
	t.Parallel()
	f := &fakeRemover{allowed: 3}
	for i := range 10 {
		f.list = append(f.list, api.Sandbox{ID: fmt.Sprintf("sb%02d", i), Status: api.StatusActive})
	}
	var stderr strings.Builder
	err := removeSandboxes(context.Background(), f, nil, true, &stderr, func([]api.Sandbox) error { return nil })
	want := "removed 3 of 10 sandboxes; the other 7 are still active: remove sandbox sb03: too many requests: at most 1000 per minute (sandbox_lifecycle) [rate_limited]"
	if err == nil || err.Error() != want {
		t.Fatalf("removeSandboxes = %v, want %q", err, want)
	}
	if f.calls != 4 || exitCode(err) != exitLimit || hintOf(err, nil) != "wait 22 s and try again" {
		t.Errorf("%d deletes, exit %d, hint %q; want 4 (stopping at the refusal), %d and the server's hint", f.calls, exitCode(err), hintOf(err, nil), exitLimit)
	}
	if n := strings.Count(stderr.String(), "removed sandbox "); n != 3 {
		t.Errorf("stderr says %d removed, want 3:\n%s", n, stderr.String())
	}
}
