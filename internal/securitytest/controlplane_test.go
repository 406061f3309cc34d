package securitytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// The control plane's side of issue 17 (findings 3 to 6): what a tenant's
// key can reach through the API, against a real sandbox.

// TestAllowlistPlantedProgram: with an allowlist of ls, a program the
// agent wrote into the workspace does not run, neither named by its path
// nor found through a PATH the command sets (finding 6); the real ls does.
func TestAllowlistPlantedProgram(t *testing.T) {
	x := newSuite(t)
	id := x.sandbox(api.CreateSandboxRequest{})
	plant := x.run(id, `mkdir -p bin && printf '#!/bin/sh\necho planted; : >/tmp/planted-ran\n' > bin/ls && chmod +x bin/ls && `+
		`printf 'int x;\n' > bin/x.so && ./bin/ls && rm /tmp/planted-ran`)
	if plant.ExitCode != 0 || !strings.Contains(plant.Stdout, "planted") {
		t.Fatalf("planting bin/ls: exit %d, stdout %q, stderr %q", plant.ExitCode, plant.Stdout, plant.Stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The builtins that take variable names are listed too: bash evaluates
	// a subscript of a name they are given as code (seccheck26).
	if _, err := x.c.SetAllowedCommands(ctx, []api.CommandRule{{Command: "ls"}, {Command: "printf"}, {Command: "read"}, {Command: "test"}, {Command: "declare"}}); err != nil {
		t.Fatalf("set the allowlist: %v", err)
	}
	for _, command := range []string{
		"./bin/ls",
		"bin/ls",
		"/workspace/bin/ls",
		"PATH=/workspace/bin ls",
		"PATH=/workspace/bin; ls",
		"PATH=/workspace/bin\nls",
		"LD_PRELOAD=/workspace/bin/x.so ls",
		"LD_LIBRARY_PATH=/workspace/bin ls",
		"BASH_ENV=/workspace/bin/ls ls",
		"IFS=/ ls",
		// dash, /bin/sh here, reads &> as & then >: ./bin/ls is a program.
		"ls &>/tmp/out ./bin/ls",
		// bash as /bin/sh (other hosts, images) reads $'\'' as a quote,
		// and runs $(…) found in a value it expands as a prompt.
		"ls $'\\''; ./bin/ls #'",
		`a='$'; b='('; x="$a${b}./bin/ls)"; ls ${x@P}`,
		// and runs $(…) found in a value it evaluates as arithmetic.
		`x=b[\$\(./bin/ls\)]; printf -v 'a[x]' 1`,
		`x=b[\$\(./bin/ls\)]; read 'a[x]' < /dev/null`,
		`x=b[\$\(./bin/ls\)]; test -v 'a[x]'`,
		`x=b[\$\(./bin/ls\)]; declare -i y=x`,
		`x=b[\$\(./bin/ls\)]; RANDOM=x`,
		`x=b[\$\(./bin/ls\)]; ls {a[x]}>/dev/null`,
	} {
		t.Run(command, func(t *testing.T) {
			res, err := x.exec(id, api.ExecRequest{Command: command})
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.Code != api.CodeCommandNotAllowed {
				t.Fatalf("exec %q = %+v, %v; want 403 %s", command, res, err, api.CodeCommandNotAllowed)
			}
		})
	}
	res := x.run(id, "ls bin")
	if res.ExitCode != 0 || strings.Contains(res.Stdout, "planted") || !strings.Contains(res.Stdout, "ls") {
		t.Errorf("ls under the allowlist: exit %d, stdout %q; want the real ls listing bin", res.ExitCode, res.Stdout)
	}
	if res := x.run(id, "ls /tmp/planted-ran"); res.ExitCode == 0 {
		t.Errorf("the planted program ran under the allowlist")
	}
}

// TestSecretsScrubbed: a credential-shaped string typed into a command
// appears in neither the audit log nor the exec's output, streamed or
// not, while a file holding it downloads byte-exact (finding 4).
func TestSecretsScrubbed(t *testing.T) {
	x := newSuite(t)
	id := x.sandbox(api.CreateSandboxRequest{})
	const key = "AKIAIOSFODNN7EXAMPLE"
	res := x.run(id, "echo "+key+" | tee /workspace/creds.txt")
	if strings.Contains(res.Stdout, key) || !strings.Contains(res.Stdout, "[REDACTED_AWS_KEY]") {
		t.Errorf("exec stdout %q, want the key scrubbed", res.Stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var streamed strings.Builder
	if _, err := x.c.ExecStream(ctx, id, api.ExecRequest{Command: "printf AKIAIOSF; printf ODNN7EXAMPLE", Timeout: 30}, func(ev api.ExecEvent) error {
		streamed.WriteString(ev.Data)
		return nil
	}); err != nil {
		t.Fatalf("streamed exec: %v", err)
	}
	if strings.Contains(streamed.String(), "ODNN7EXAMPLE") {
		t.Errorf("streamed output %q holds the key's second half", streamed.String())
	}
	dl, err := x.c.DownloadFile(ctx, id, "/workspace/creds.txt")
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	body, err := io.ReadAll(dl)
	dl.Close()
	if err != nil || string(body) != key+"\n" {
		t.Errorf("download = %q, %v; want the file byte-exact", body, err)
	}
	page, err := x.c.Log(ctx, id, 100, 0)
	if err != nil {
		t.Fatalf("log: %v", err)
	}
	for _, e := range page.Entries {
		if strings.Contains(string(e.Detail), key) {
			t.Errorf("audit entry %s keeps the key: %s", e.Operation, e.Detail)
		}
	}
}

// TestRevocationEndsStreams: after DELETE /v1/api-keys/{id}, that key's
// watch stream and streamed exec end, and it cannot resume them; the
// exec's command runs on in the sandbox and is audited (finding 3).
func TestRevocationEndsStreams(t *testing.T) {
	x := newSuite(t)
	id := x.sandbox(api.CreateSandboxRequest{})
	x.run(id, "true") // an entry for the watch to replay
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := x.c.CreateAPIKey(ctx, api.CreateAPIKeyRequest{Name: "doomed", Role: api.RoleAdmin})
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	doomed := client.New(x.s.BaseURL, k.Key)

	watching := make(chan struct{})
	watchErr := make(chan error, 1)
	go func() {
		var once sync.Once
		watchErr <- doomed.WatchLog(ctx, id, "", func(api.LogEntry) error {
			once.Do(func() { close(watching) })
			return nil
		})
	}()
	started := make(chan struct{})
	execErr := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := doomed.ExecStream(ctx, id, api.ExecRequest{Command: "echo started; sleep 2; echo done > /workspace/marker", Timeout: 60},
			func(ev api.ExecEvent) error {
				if strings.Contains(ev.Data, "started") {
					once.Do(func() { close(started) })
				}
				return nil
			})
		execErr <- err
	}()
	<-watching
	<-started
	if err := x.c.RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	for name, ch := range map[string]chan error{"watch": watchErr, "exec stream": execErr} {
		select {
		case err := <-ch:
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
				t.Errorf("%s ended with %v, want a 401 (the key is revoked)", name, err)
			}
		case <-ctx.Done():
			t.Fatalf("%s did not end after the key was revoked", name)
		}
	}
	// The command ran on: its file appears, and its exec is in the log.
	if err := eventually(30*time.Second, func() error {
		if res := x.run(id, "cat /workspace/marker"); res.ExitCode != 0 {
			return fmt.Errorf("no marker yet: %s", res.Stderr)
		}
		page, err := x.c.Log(ctx, id, 100, 0)
		if err != nil {
			return err
		}
		for _, e := range page.Entries {
			if e.Operation == "exec" && strings.Contains(string(e.Detail), "sleep 2") {
				return nil
			}
		}
		return errors.New("the exec is not in the log yet")
	}); err != nil {
		t.Errorf("after revocation: %v", err)
	}
}
