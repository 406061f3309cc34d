package kube_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSnapshots is issue 22 on the kube driver: a snapshot copies the
// workspace through the sidecar (method sidecar-copy) into the snapshot
// directory; a restore starts a new pod with those files, byte-exact,
// after the parent is gone; a fork ×2 gives children with the parent's
// files whose writes no other sees; a claimed warm pod is snapshotted as a
// cold one is; deleting the snapshot removes its file.
func TestSnapshots(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, kube.Config{SnapshotDir: dir, PoolSize: 1})
	e.start(t)
	c := e.client()
	ctx := context.Background()
	exec := func(id, cmd string) string { t.Helper(); return mustExec(t, c, id, cmd) }
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sums := exec(sb.ID, "mkdir -p d && head -c 3M /dev/urandom > d/big && echo one > small && chmod 640 small && "+
		"sha256sum d/big small && stat -c %a small")
	snap, err := c.CreateSnapshot(ctx, sb.ID, "k")
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if snap.Status != api.SnapshotCompleted || snap.Method != "sidecar-copy" || snap.SizeBytes < 3<<20 {
		t.Errorf("snapshot answered %+v", snap)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "sha256-*.tar")); len(files) != 1 {
		t.Errorf("snapshot directory holds %v, want one sha256-….tar", files)
	}
	exec(sb.ID, "echo two > small && rm d/big")
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	restored, err := c.RestoreSnapshot(ctx, snap.ID, "back")
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	check := "sha256sum d/big small && stat -c %a small"
	if got := exec(restored.ID, check); got != sums {
		t.Errorf("restored files:\n%s\nwant\n%s", got, sums)
	}

	kids, err := c.ForkSandbox(ctx, restored.ID, 2)
	if err != nil || len(kids) != 2 {
		t.Fatalf("fork: %v, %v", kids, err)
	}
	for _, k := range kids {
		if got := exec(k.ID, check); got != sums {
			t.Errorf("child %s files:\n%s\nwant\n%s", k.ID, got, sums)
		}
	}
	exec(kids[0].ID, "echo mine > small")
	for _, id := range []string{kids[1].ID, restored.ID} {
		if got := exec(id, "cat small"); got != "one\n" {
			t.Errorf("%s sees %q after a write in a sibling, want one", id, got)
		}
	}

	if err := c.DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatal(err)
	}
	left, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(left) != 0 {
		t.Errorf("snapshot directory after the delete: %v, %v (the fork's copy and the snapshot should be gone)", left, err)
	}
}

// TestPause is pause and resume on the kube driver: freeze and
// checkpoint are refused with a hint; a filesystem pause copies the workspace out and deletes the
// pod; a restarted control plane keeps it paused; resume starts it again at a new address with the same id and
// token, the files back, the process started with restart running again
// and the other reported ended; a paused sandbox deleted leaves no Secret
// and no copy.
func TestPause(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, kube.Config{SnapshotDir: dir})
	e.start(t)
	c := e.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "echo kept > kept.txt"}); err != nil {
		t.Fatal(err)
	}
	keep, err := c.StartProcess(ctx, sb.ID, api.ProcessStartRequest{Command: "sleep 600", Restart: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartProcess(ctx, sb.ID, api.ProcessStartRequest{Command: "sleep 601"}); err != nil {
		t.Fatal(err)
	}
	// freeze, the default, is refused, and the hint names the mode
	// that works here, not the one just refused.
	_, err = c.PauseSandbox(ctx, sb.ID, api.PauseFreeze)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeNotSupported ||
		!strings.Contains(ae.Hint, "mode filesystem instead") || strings.Contains(ae.Hint, "freeze") {
		t.Errorf("freeze on kube: %#v, want not_supported with a hint to pause with mode filesystem", err)
	}
	// So is checkpoint, with the same hint, and the sandbox still runs.
	_, err = c.PauseSandbox(ctx, sb.ID, api.PauseCheckpoint)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeNotSupported || ae.Message == "" ||
		!strings.Contains(ae.Hint, "mode filesystem instead") {
		t.Errorf("checkpoint on kube: %#v, want not_supported with a hint to pause with mode filesystem", err)
	}
	if got, err := c.Sandbox(ctx, sb.ID); err != nil || got.Status != api.StatusActive || got.PausedWith != "" {
		t.Errorf("after the refused pauses: %+v, %v; want it active", got, err)
	}
	paused, err := c.PauseSandbox(ctx, sb.ID, api.PauseFilesystem)
	if err != nil || paused.Status != api.StatusPaused {
		t.Fatalf("filesystem pause: %+v, %v", paused, err)
	}
	pods, err := e.cluster.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + sb.ID})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods of the paused sandbox: %d, %v; want none", len(pods.Items), err)
	}
	if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "true"}); codeOf(err) != api.CodeSandboxPaused {
		t.Errorf("exec while paused: %v, want sandbox_paused", err)
	}
	// A new control plane finds it paused and leaves it so.
	e.restart(t)
	c = e.client()
	if got, err := c.Sandbox(ctx, sb.ID); err != nil || got.Status != api.StatusPaused {
		t.Fatalf("after a restart: %+v, %v; want paused", got, err)
	}
	res, err := c.ResumeSandbox(ctx, sb.ID)
	if err != nil || res.Status != api.StatusActive || res.ID != sb.ID {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	got := map[string]string{}
	for _, p := range res.Processes {
		got[p.Command] = p.Status
	}
	if got["sleep 600"] != api.ProcessRestarted || got["sleep 601"] != api.ProcessEnded {
		t.Errorf("resumed processes %+v, want sleep 600 restarted and sleep 601 ended (restart was %s)", res.Processes, keep.ProcessID)
	}
	out, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "cat kept.txt"})
	if err != nil || out.Stdout != "kept\n" {
		t.Errorf("files after resume: %+v, %v", out, err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Errorf("snapshot directory after resume: %v, want empty", files)
	}
	// A pause deletes the pod: the loss watch sees it go, and must take
	// neither the paused sandbox nor the resumed one for lost once its
	// grace (2 s) has passed.
	if _, err := c.PauseSandbox(ctx, sb.ID, api.PauseFilesystem); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if got, err := c.Sandbox(ctx, sb.ID); err != nil || got.Status != api.StatusPaused {
		t.Errorf("3 s after the pause: %+v, %v; want paused", got, err)
	}
	if _, err := c.ResumeSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if got, err := c.Sandbox(ctx, sb.ID); err != nil || got.Status != api.StatusActive {
		t.Errorf("3 s after the resume: %+v, %v; want active", got, err)
	}

	if _, err := c.PauseSandbox(ctx, sb.ID, api.PauseFilesystem); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	secs, err := e.cluster.Client.CoreV1().Secrets(e.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + sb.ID})
	if err != nil || len(secs.Items) != 0 {
		t.Errorf("secrets of the deleted paused sandbox: %d, %v; want none", len(secs.Items), err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Errorf("snapshot directory after deleting the paused sandbox: %v, want empty", files)
	}
}

// codeOf is an API error's code, or "".
func codeOf(err error) string {
	if e, ok := errors.AsType[*api.Error](err); ok {
		return e.Code
	}
	return ""
}

// TestPausedSecretGone: a paused sandbox whose Secret is gone (removed by
// hand, or with its namespace's contents) has nothing to resume from: a
// resume is 410 sandbox_lost and a starting control plane records it
// lost, instead of 502 "retry" for ever.
func TestPausedSecretGone(t *testing.T) {
	e := newEnv(t, kube.Config{SnapshotDir: t.TempDir()})
	e.start(t)
	c := e.client()
	ctx := context.Background()
	var ids []string
	for range 2 {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PauseSandbox(ctx, sb.ID, api.PauseFilesystem); err != nil {
			t.Fatalf("pause: %v", err)
		}
		sel := metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + sb.ID}
		if err := e.cluster.Client.CoreV1().Secrets(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sb.ID)
	}
	if _, err := c.ResumeSandbox(ctx, ids[0]); codeOf(err) != api.CodeSandboxLost {
		t.Errorf("resume without its Secret: %v, want %s", err, api.CodeSandboxLost)
	}
	e.restart(t)
	c = e.client()
	for _, id := range ids {
		if got, err := c.Sandbox(ctx, id); err != nil || got.Status != api.StatusLost {
			t.Errorf("paused sandbox without its Secret after a restart: %+v, %v; want lost", got, err)
		}
	}
}

// TestSnapshotCopyFails: a snapshot or fork whose copy fails (here the
// snapshot directory cannot be made) answers 502 with a message that
// says what could not be done, in a sentence.
func TestSnapshotCopyFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, kube.Config{SnapshotDir: filepath.Join(file, "snapshots")})
	e.start(t)
	c := e.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateSnapshot(ctx, sb.ID, "")
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeSandboxFailed || ae.Message != "could not take the snapshot" {
		t.Errorf("snapshot: %#v, want 502 %q", err, "could not take the snapshot")
	}
	_, err = c.ForkSandbox(ctx, sb.ID, 1)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeSandboxFailed || ae.Message != "could not copy the sandbox's filesystem for the fork" {
		t.Errorf("fork: %#v, want 502 %q", err, "could not copy the sandbox's filesystem for the fork")
	}
}
