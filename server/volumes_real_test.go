package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

// volEnv drives a real control plane (servertest) through HTTP.
type volEnv struct{ re *realEnv }

func (v volEnv) call(method, path, body string, want int, out any) {
	v.re.t.Helper()
	var r *strings.Reader
	if body != "" {
		r = strings.NewReader(body)
	} else {
		r = strings.NewReader("")
	}
	resp, b := v.re.do(method, path, v.re.s.APIKey, r)
	if resp.StatusCode != want {
		v.re.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		mustUnmarshal(v.re.t, b, out)
	}
}

func (v volEnv) sandbox(mounts map[string]string) api.Sandbox {
	v.re.t.Helper()
	body, _ := json.Marshal(api.CreateSandboxRequest{VolumeMounts: mounts})
	var sb api.Sandbox
	v.call("POST", "/v1/sandboxes", string(body), http.StatusCreated, &sb)
	return sb
}

func (v volEnv) exec(sb api.Sandbox, cmd string) api.ExecResult {
	v.re.t.Helper()
	body, _ := json.Marshal(api.ExecRequest{Command: cmd})
	var res api.ExecResult
	v.call("POST", sandboxPath(sb.ID, "/exec"), string(body), http.StatusOK, &res)
	return res
}

// TestVolumeOutlivesSandbox is issue 7 acceptance 2: a file written to a
// volume from one sandbox is read from another after the first is
// deleted, the quota holds, and a mounted volume cannot be deleted.
func TestVolumeOutlivesSandbox(t *testing.T) {
	s := servertest.New(t)
	v := volEnv{re: &realEnv{t: t, s: s}}

	var vol api.Volume
	v.call("POST", "/v1/volumes", `{"label":"data","size_gb":0.03}`, http.StatusCreated, &vol)
	if vol.Status != api.VolumeReady || vol.Label != "data" || vol.SizeGB != 0.03 {
		t.Fatalf("created %+v", vol)
	}
	var got api.Volume
	v.call("GET", "/v1/volumes/"+vol.ID, "", http.StatusOK, &got)
	var list []api.Volume
	v.call("GET", "/v1/volumes", "", http.StatusOK, &list)
	if got.ID != vol.ID || len(list) != 1 || list[0].ID != vol.ID {
		t.Fatalf("get %+v, list %+v", got, list)
	}

	first := v.sandbox(map[string]string{vol.ID: "/workspace/data"})
	if res := v.exec(first, "echo kept > /workspace/data/f && cat /workspace/data/f"); res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Fatalf("write: %+v", res)
	}
	// The quota: 30 MiB of volume cannot take 64 MiB.
	res := v.exec(first, "dd if=/dev/zero of=/workspace/data/big bs=1M count=64 2>&1; echo rc=$?")
	if !strings.Contains(res.Stdout, "No space left on device") {
		t.Fatalf("writing past the quota: %+v", res)
	}
	v.exec(first, "rm -f /workspace/data/big")
	// Refused while a paused sandbox mounts it, and the hint names that
	// sandbox (session 20: it said only "the sandboxes that mount it").
	v.call("POST", sandboxPath(first.ID, "/pause"), "", http.StatusOK, nil)
	var refusal api.ErrorEnvelope
	v.call("DELETE", "/v1/volumes/"+vol.ID, "", http.StatusConflict, &refusal)
	if refusal.Error == nil || refusal.Error.Code != api.CodeVolumeInUse || !strings.Contains(refusal.Error.Hint, first.ID) {
		t.Fatalf("the refusal %+v does not name the sandbox %s", refusal.Error, first.ID)
	}

	v.call("DELETE", sandboxPath(first.ID), "", http.StatusNoContent, nil)
	second := v.sandbox(map[string]string{vol.ID: "/workspace/again"})
	if res := v.exec(second, "cat /workspace/again/f"); res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Fatalf("read from a second sandbox: %+v", res)
	}
	v.call("DELETE", sandboxPath(second.ID), "", http.StatusNoContent, nil)
	v.call("DELETE", "/v1/volumes/"+vol.ID, "", http.StatusNoContent, nil)
	v.call("GET", "/v1/volumes/"+vol.ID, "", http.StatusNotFound, nil)
}

func TestVolumeMountValidation(t *testing.T) {
	s := servertest.New(t)
	v := volEnv{re: &realEnv{t: t, s: s}}
	var vol api.Volume
	v.call("POST", "/v1/volumes", `{}`, http.StatusCreated, &vol)
	if vol.SizeGB != 1 {
		t.Errorf("default size_gb = %v, want 1", vol.SizeGB)
	}
	var other api.Volume
	v.call("POST", "/v1/volumes", `{"size_gb":0.1}`, http.StatusCreated, &other)
	v.call("POST", "/v1/volumes", `{"size_gb":-1}`, http.StatusUnprocessableEntity, nil)
	v.call("POST", "/v1/volumes", `{"size_gb":100000}`, http.StatusUnprocessableEntity, nil)
	for _, tc := range []struct {
		name   string
		mounts string
		want   int
	}{
		{"unknown volume", `{"nope":"/workspace/x"}`, http.StatusNotFound},
		{"relative", fmt.Sprintf(`{%q:"workspace/x"}`, vol.ID), http.StatusUnprocessableEntity},
		{"workspace itself", fmt.Sprintf(`{%q:"/workspace"}`, vol.ID), http.StatusUnprocessableEntity},
		{"outside workspace", fmt.Sprintf(`{%q:"/etc/x"}`, vol.ID), http.StatusUnprocessableEntity},
		{"unclean", fmt.Sprintf(`{%q:"/workspace/../etc"}`, vol.ID), http.StatusUnprocessableEntity},
		{"overlapping", fmt.Sprintf(`{%q:"/workspace/a",%q:"/workspace/a/b"}`, vol.ID, other.ID), http.StatusUnprocessableEntity},
		{"another account's or unknown, beside a good one", fmt.Sprintf(`{%q:"/workspace/a","nope":"/workspace/b"}`, vol.ID), http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v.re.t = t
			v.call("POST", "/v1/sandboxes", `{"volume_mounts":`+tc.mounts+`}`, tc.want, nil)
		})
	}
}

// TestRestoreWithoutVolumeMountPoints: a restore or fork child of a
// sandbox that mounted volumes (which are not part of the copy) has no
// directory where they were mounted, as a fresh sandbox has none: it had
// the empty root-owned mount points, which the sandbox user could neither
// write nor remove (session 20, state20 item 4). The sandbox's own
// directories stay, an empty one too.
func TestRestoreWithoutVolumeMountPoints(t *testing.T) {
	s := servertest.New(t)
	v := volEnv{re: &realEnv{t: t, s: s}}
	var vol, vol2 api.Volume
	v.call("POST", "/v1/volumes", `{"size_gb":0.03}`, http.StatusCreated, &vol)
	v.call("POST", "/v1/volumes", `{"size_gb":0.03}`, http.StatusCreated, &vol2)
	parent := v.sandbox(map[string]string{vol.ID: "/workspace/shared", vol2.ID: "/workspace/nest/ed"})
	if res := v.exec(parent, "echo in-volume > /workspace/shared/f && echo own > /workspace/own && mkdir /workspace/keep"); res.ExitCode != 0 {
		t.Fatalf("parent: %+v", res)
	}
	const want = "keep\nown\n"
	ls := func(what string, sb api.Sandbox) {
		t.Helper()
		if res := v.exec(sb, "ls -A /workspace"); res.ExitCode != 0 || res.Stdout != want {
			t.Errorf("%s: /workspace holds %q (%+v), want %q", what, res.Stdout, res, want)
		}
		if res := v.exec(sb, "mkdir /workspace/shared && echo mine > /workspace/shared/f && cat /workspace/shared/f"); res.ExitCode != 0 || res.Stdout != "mine\n" {
			t.Errorf("%s: the sandbox user cannot make /workspace/shared its own: %+v", what, res)
		}
	}
	var sn api.Snapshot
	v.call("POST", sandboxPath(parent.ID, "/snapshots"), `{}`, http.StatusCreated, &sn)
	var restored api.Sandbox
	v.call("POST", "/v1/snapshots/"+sn.ID+"/restore", `{}`, http.StatusCreated, &restored)
	ls("restore", restored)
	var kids []api.Sandbox
	v.call("POST", sandboxPath(parent.ID, "/fork"), `{}`, http.StatusCreated, &kids)
	ls("fork child", kids[0])
	// The parent keeps its volumes.
	if res := v.exec(parent, "cat /workspace/shared/f && ls /workspace/nest"); res.Stdout != "in-volume\ned\n" {
		t.Errorf("parent after: %+v", res)
	}
}
