//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testExecInterrupt sends the boxkite exec process real signals while its
// command runs in the sandbox: the first Ctrl-C (SIGINT; SIGTERM too)
// reaches the command, which takes it its own way (a trap runs) and
// boxkite exits with the code it then exits with (130 for a death by
// SIGINT), the audit entry recording it; a second one within 2 s kills
// the command and ends boxkite at once.
func testExecInterrupt(t *testing.T, s *localServer) {
	cases := []struct {
		name    string
		command string
		signals []os.Signal
		want    int
		file    string // what the command's trap wrote in /workspace/trap.txt
	}{
		{
			name:    "a trap runs and its exit code is boxkite's",
			command: "rm -f trap.txt; trap 'echo trapped-int > trap.txt; exit 7' INT; echo ready; while :; do sleep 0.1; done",
			signals: []os.Signal{os.Interrupt}, want: 7, file: "trapped-int",
		},
		{
			name:    "SIGTERM goes as SIGTERM",
			command: "rm -f trap.txt; trap 'echo trapped-term > trap.txt; exit 8' TERM; echo ready; while :; do sleep 0.1; done",
			signals: []os.Signal{syscall.SIGTERM}, want: 8, file: "trapped-term",
		},
		{
			name:    "a command killed by SIGINT exits 130",
			command: "echo ready; exec sleep 120",
			signals: []os.Signal{os.Interrupt}, want: 130,
		},
		{
			name:    "a second Ctrl-C kills a command that ignores the first",
			command: "trap '' INT; echo ready; sleep 120",
			signals: []os.Signal{os.Interrupt, os.Interrupt}, want: 130,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, s.cli, "exec", "--timeout", "5m", "--", c.command)
			cmd.Env, cmd.WaitDelay = s.env, 5*time.Second
			var stderr bytes.Buffer // read once boxkite ended
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The signal goes once the command runs in the sandbox.
			lines := bufio.NewScanner(out)
			if !lines.Scan() || lines.Text() != "ready" {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("boxkite exec: stdout %q, want ready; stderr %q", lines.Text(), stderr.String())
			}
			for _, sig := range c.signals {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond) // two Ctrl-Cs as a person types them
			}
			for lines.Scan() {
			}
			err = cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("boxkite exec did not end after %d signal(s): stderr %q", len(c.signals), stderr.String())
			}
			got := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				got = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("boxkite exec exited %d, want %d; stderr %q", got, c.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "error:") {
				t.Errorf("stderr %q, want no error: the command ended as it chose", stderr.String())
			}
			if c.file != "" {
				if got := strings.TrimSpace(s.mustRun(t, "exec", "cat trap.txt")); got != c.file {
					t.Errorf("the trap wrote %q, want %q", got, c.file)
				}
			}
		})
	}
	t.Run("--json forwards too", func(t *testing.T) { testExecJSONInterrupt(t, s) })
	// The audit log has the exit of each command that ended its own way.
	log := s.mustRun(t, "log", "--json", "--limit", "30")
	for _, want := range []string{`"exit_code": 7`, `"exit_code": 8`, `"exit_code": 130`, `"exit_code": 9`} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log has no %s:\n%s", want, log)
		}
	}
}

// testExecJSONInterrupt: boxkite exec --json forwards Ctrl-C to the command
// as the streamed exec does, and prints the result the command then ends
// with, in --json's shape.
func testExecJSONInterrupt(t *testing.T, s *localServer) {
	s.mustRun(t, "exec", "rm -f json-ready trap.txt")
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.cli, "exec", "--json", "--timeout", "5m", "--",
		"trap 'echo trapped-json > trap.txt; echo bye; exit 9' INT; echo ready; touch json-ready; while :; do sleep 0.1; done")
	cmd.Env, cmd.WaitDelay = s.env, 5*time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// --json prints at the end: the command says it runs with a file.
	for {
		if _, _, err := s.run(t, "exec", "test -f json-ready"); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the command never ran; stderr %q", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("boxkite exec --json did not end after SIGINT: stderr %q", stderr.String())
	}
	got := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		got = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if got != 9 {
		t.Errorf("boxkite exec --json exited %d, want 9 (the trap's); stderr %q", got, stderr.String())
	}
	var res struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not the --json result: %v\n%s", err, stdout.String())
	}
	if res.ExitCode != 9 || res.Stdout != "ready\nbye\n" {
		t.Errorf("result %+v, want exit_code 9 and stdout \"ready\\nbye\\n\"", res)
	}
	if got := strings.TrimSpace(s.mustRun(t, "exec", "cat trap.txt")); got != "trapped-json" {
		t.Errorf("the trap wrote %q, want trapped-json", got)
	}
}
