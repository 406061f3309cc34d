package kube_test

import (
	"testing"

	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/internal/e2bsdk/e2btui"
	"github.com/boxkite/boxkite/server/kube"
)

// TestE2BSDK is issue 21's acceptance 1 and 3 on the kube driver: the
// real E2B SDKs through every flow of flows.mjs against a control plane
// whose sandboxes are pods, then the audit log. (cmd/boxkite-server's
// TestE2BSDK is the same on the local driver.)
func TestE2BSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	sdk := e2bsdk.Dir(t)
	e := newEnv(t, kube.Config{})
	e.start(t)
	res := e2bsdk.RunFlows(t, sdk, e2bsdk.Server{Base: e.url, Key: e.key, OtherKey: e2bsdk.OtherAccountKey(t, e.url), Unjailed: true},
		func() string { return "(the server logs to the test log)" })
	e2bsdk.CheckAudit(t, e.client(), res)
	e2btui.Check(t, e.client(), res)
}

// TestE2BPause is issue 22 through the real e2b SDK on the kube driver
// (pause.mjs, as cmd/boxkite-server's TestE2BPause on the local driver):
// pause({keepMemory: false}) and Sandbox.connect resuming, the paused
// state in list and getInfo, the default pause (keeping memory) refused,
// lifecycle.onTimeout "pause", snapshots restored with Sandbox.create and
// fork. About 30 s.
func TestE2BPause(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	sdk := e2bsdk.Dir(t)
	e := newEnv(t, kube.Config{SnapshotDir: t.TempDir()})
	e.start(t)
	e2bsdk.RunPause(t, sdk, e2bsdk.Server{Base: e.url, Key: e.key}, func() string { return "(the server logs to the test log)" }, true)
}
