package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestStatsOnKube: the kube driver reports no usage; the answer says
// where an operator finds it, by the label every sandbox pod carries
// (a claimed warm pod keeps its own name).
func TestStatsOnKube(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	ctx := context.Background()
	sb, err := e.client().CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.client().SandboxStats(ctx, sb.ID)
	want := "kubectl top pod -l " + kube.LabelSandbox + "=" + sb.ID
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeNotSupported || !strings.Contains(ae.Hint, want) {
		t.Errorf("stats: %#v, want not_supported with a hint %q", err, want)
	}
}
