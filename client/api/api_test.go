package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestExecEventJSON(t *testing.T) {
	tests := []struct {
		name string
		ev   ExecEvent
		want string
	}{
		{"stdout", ExecEvent{Type: EventStdout, Data: "hi\n"}, `{"type":"stdout","data":"hi\n"}`},
		{"exit zero keeps the code", ExecEvent{Type: EventExit, ExitCode: 0, DurationMS: 0}, `{"type":"exit","exit_code":0,"duration_ms":0,"truncated":false,"stdout_bytes":0,"stderr_bytes":0,"output_limit_bytes":0}`},
		{"exit code", ExecEvent{Type: EventExit, ExitCode: 124, DurationMS: 7}, `{"type":"exit","exit_code":124,"duration_ms":7,"truncated":false,"stdout_bytes":0,"stderr_bytes":0,"output_limit_bytes":0}`},
		{
			"exit truncated",
			ExecEvent{Type: EventExit, ExitCode: 137, DurationMS: 7, ExecOutputInfo: ExecOutputInfo{Truncated: true, StdoutBytes: 5 << 20, OutputLimitBytes: 1 << 20, StopReason: StopReasonOutputLimit}},
			`{"type":"exit","exit_code":137,"duration_ms":7,"truncated":true,"stdout_bytes":5242880,"stderr_bytes":0,"output_limit_bytes":1048576,"stop_reason":"output_limit"}`,
		},
		{"error", ExecEvent{Type: EventError, Error: &Error{Code: "sandbox_lost", Message: "gone"}}, `{"type":"error","error":{"code":"sandbox_lost","message":"gone"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal(%+v) = %s, want %s", tt.ev, got, tt.want)
			}
			var back ExecEvent
			if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, tt.ev) {
				t.Errorf("round trip of %s = %+v (%v), want %+v", got, back, err, tt.ev)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	e := Errorf(404, CodeNotFound, "sandbox %s not found", "abc").WithHint("run boxkite session ls")
	if got, want := e.Error(), "sandbox abc not found [not_found]"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if e.Hint == "" || StatusOf(e.Code) != 404 {
		t.Errorf("hint %q status %d", e.Hint, StatusOf(e.Code))
	}
}

func TestStatusOfDurabilityCodes(t *testing.T) {
	tests := []struct {
		code string
		want int
	}{
		{CodeInsufficientStorage, 507},
		{CodeSandboxLost, 410},
		{CodeHostCapacity, 503},
		{CodeAuditUnavailable, 503},
	}
	for _, tt := range tests {
		if got := StatusOf(tt.code); got != tt.want {
			t.Errorf("StatusOf(%q) = %d, want %d", tt.code, got, tt.want)
		}
	}
}

func TestStatusOfPermissionDenied(t *testing.T) {
	if got := StatusOf(CodePermissionDenied); got != 403 {
		t.Errorf("StatusOf(%q) = %d, want 403", CodePermissionDenied, got)
	}
}
