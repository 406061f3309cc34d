package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestRevocationEndsInteractiveExec: revoking the key (or deleting the SSH
// key) behind an interactive exec (`ssh id@bastion 'cmd'`, sftp) closes
// it with a policy-violation status naming the revocation, as a takeover
// closes, and kills the command. Before, the request's cancelled context
// dropped the connection without a close frame, and the bastion printed
// "the connection ended before the command did: failed to get reader:
// failed to read frame header: EOF".
func TestRevocationEndsInteractiveExec(t *testing.T) {
	e := newEnv(t, server.Config{})
	started, sidecarEnded := make(chan struct{}, 1), make(chan struct{})
	e.Sidecar.Route("GET /exec/interactive", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		started <- struct{}{}
		_, _, _ = c.Read(r.Context()) // until the server's side goes: the command is killed
		close(sidecarEnded)
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	doomed := e.newKey(e.KeyA, "doomed", api.RoleAdmin)
	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	x, err := client.New(e.URL, doomed.Key).StartInteractive(ctx, sb.ID, api.InteractiveRequest{Command: "sleep 30"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	<-started
	if resp, body := e.do("DELETE", "/v1/api-keys/"+doomed.ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	_, err = x.Run(ctx, nil, &strings.Builder{}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "the credential of this session was revoked") || strings.Contains(err.Error(), "frame header") {
		t.Errorf("run after revocation: %v; want the revocation named", err)
	}
	select {
	case <-sidecarEnded:
	case <-ctx.Done():
		t.Error("the command's sidecar connection outlived the revocation")
	}
}
