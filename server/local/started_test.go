//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestCreateStarted: Create tells spec.Started the endpoint once the
// jail's process runs, before the sidecar answers, and only then; an exec
// sent at that moment (as the control plane's row, committed active
// meanwhile, allows) waits in the listener's backlog and is answered.
func TestCreateStarted(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	var calls []model.Endpoint
	early := make(chan error, 1)
	ep, err := d.Create(t.Context(), model.Spec{ID: "started", Started: func(ep model.Endpoint) {
		calls = append(calls, ep)
		go func() { early <- execOnce(ep, "echo early") }()
	}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if len(calls) != 1 || !cmp.Equal(calls[0], ep) {
		t.Fatalf("Started called with %v; want once, with Create's endpoint %v", calls, ep)
	}
	if err := <-early; err != nil {
		t.Errorf("exec sent at Started: %v", err)
	}
}

// execOnce runs command over a connection of its own and checks that it
// printed its argument.
func execOnce(ep model.Endpoint, command string) error {
	body, err := json.Marshal(api.ExecRequest{Command: command, Timeout: 20})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://sidecar/exec", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.HeaderSidecarToken, ep.Token)
	resp, err := unixClient(ep.Address).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var res api.ExecResult
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &res) != nil || res.ExitCode != 0 || res.Stdout != "early\n" {
		return fmt.Errorf("%s: %s", resp.Status, raw)
	}
	return nil
}
