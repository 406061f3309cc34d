package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

const processDefaultRuntime = 3600

// idRE matches process and language-server ids; they end up in URL paths,
// so anything else is refused before it gets there.
var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func checkID(what, id string) string {
	if !idRE.MatchString(id) {
		return fmt.Sprintf("Error: %s %q is not a valid id", what, id)
	}
	return ""
}

func startProcessTool() Tool {
	return Tool{
		Name: "start_process",
		Description: "Start a shell command in the background in the sandbox (a server, a watcher, a long build) and return its process_id at once. " +
			"Read its output with get_process_output, write to its stdin with send_process_input, end it with stop_process. " +
			"It is killed after max_runtime_seconds; at most 4 run at a time.",
		Schema: object(
			strParam("command", "The shell command to run.").req(),
			strParam("description", "A short note on what the process is for, shown by list_processes."),
			intParam("max_runtime_seconds", "Seconds after which the process is killed (default 3600, max 14400).", processDefaultRuntime, 1, api.MaxProcessRuntime),
		),
		Handler: runStartProcess,
	}
}

func runStartProcess(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Command     string `json:"command"`
		Description string `json:"description"`
		MaxRuntime  int    `json:"max_runtime_seconds"`
	}{MaxRuntime: processDefaultRuntime}
	if msg := decode("start_process", args, &in); msg != "" {
		return msg, nil
	}
	if strings.TrimSpace(in.Command) == "" {
		return "Error: command must not be empty", nil
	}
	if msg := checkSeconds("max_runtime_seconds", float64(in.MaxRuntime), 1, api.MaxProcessRuntime, processDefaultRuntime); msg != "" {
		return msg, nil
	}
	ps, ok := sb.(Processes)
	if !ok {
		return unsupported("background processes"), nil
	}
	res, err := ps.StartProcess(ctx, api.ProcessStartRequest{
		Command:           in.Command,
		Description:       in.Description,
		MaxRuntimeSeconds: in.MaxRuntime,
	})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	return fmt.Sprintf("Started process %s (status: %s)\nRead its output with get_process_output(process_id=%q); stop it with stop_process.",
		res.ProcessID, res.Status, res.ProcessID), nil
}

func processOutputTool() Tool {
	return Tool{
		Name: "get_process_output",
		Description: "Read the output (stdout and stderr together) of a background process started with start_process, with its status and exit code. " +
			"Pass the returned next offset as since_offset to read only what is new.",
		Schema: object(
			strParam("process_id", "The id start_process returned.").req(),
			intParam("since_offset", "Byte offset to read from (default 0, the start).", 0, 0, 0).noMax(),
		),
		Handler: runProcessOutput,
	}
}

func runProcessOutput(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		ID    string `json:"process_id"`
		Since int64  `json:"since_offset"`
	}
	if msg := decode("get_process_output", args, &in); msg != "" {
		return msg, nil
	}
	if msg := checkID("process_id", in.ID); msg != "" {
		return msg, nil
	}
	ps, ok := sb.(Processes)
	if !ok {
		return unsupported("background processes"), nil
	}
	res, err := ps.ProcessOutput(ctx, in.ID, max(in.Since, 0))
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Process %s: %s%s\n", in.ID, res.Status, exitSuffix(res.ExitCode))
	if res.Truncated {
		b.WriteString("(older output was dropped from the buffer; this is all that is kept)\n")
	}
	if out := strings.TrimRight(res.StdoutChunk, "\n"); out != "" {
		b.WriteString(Redact(out) + "\n")
	} else {
		b.WriteString("(no new output)\n")
	}
	fmt.Fprintf(&b, "Next offset: %d", res.NextOffset)
	return b.String(), nil
}

// exitSuffix is " (exit_code=N)" once a process has an exit code.
func exitSuffix(code *int) string {
	if code == nil {
		return ""
	}
	return fmt.Sprintf(" (exit_code=%d)", *code)
}

func processInputTool() Tool {
	return Tool{
		Name:        "send_process_input",
		Description: "Write data to the stdin of a running background process. Include a trailing newline when the program reads lines.",
		Schema: object(
			strParam("process_id", "The id start_process returned.").req(),
			strParam("data", "The text to write, e.g. \"yes\\n\".").req(),
		),
		Handler: runProcessInput,
	}
}

func runProcessInput(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		ID   string `json:"process_id"`
		Data string `json:"data"`
	}
	if msg := decode("send_process_input", args, &in); msg != "" {
		return msg, nil
	}
	if msg := checkID("process_id", in.ID); msg != "" {
		return msg, nil
	}
	if len(in.Data) > api.MaxProcessInput {
		return fmt.Sprintf("Error: data is %d bytes; the limit is %d MiB", len(in.Data), api.MaxProcessInput>>20), nil
	}
	ps, ok := sb.(Processes)
	if !ok {
		return unsupported("background processes"), nil
	}
	res, err := ps.SendProcessInput(ctx, in.ID, in.Data)
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	return fmt.Sprintf("Wrote %d bytes to process %s", res.BytesWritten, in.ID), nil
}

func stopProcessTool() Tool {
	return Tool{
		Name:        "stop_process",
		Description: "Stop a background process: SIGTERM, then SIGKILL if it is still running 5 seconds later. Returns its final status and exit code.",
		Schema: object(
			strParam("process_id", "The id start_process returned.").req(),
		),
		Handler: runStopProcess,
	}
}

func runStopProcess(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		ID string `json:"process_id"`
	}
	if msg := decode("stop_process", args, &in); msg != "" {
		return msg, nil
	}
	if msg := checkID("process_id", in.ID); msg != "" {
		return msg, nil
	}
	ps, ok := sb.(Processes)
	if !ok {
		return unsupported("background processes"), nil
	}
	res, err := ps.StopProcess(ctx, in.ID)
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	return fmt.Sprintf("Process %s: %s%s", in.ID, res.Status, exitSuffix(res.ExitCode)), nil
}

func listProcessesTool() Tool {
	return Tool{
		Name:        "list_processes",
		Description: "List the background processes of the sandbox with their ids, status, exit code and command.",
		Schema:      object(),
		Handler:     runListProcesses,
	}
}

func runListProcesses(ctx context.Context, sb Sandbox, _ json.RawMessage) (string, error) {
	ps, ok := sb.(Processes)
	if !ok {
		return unsupported("background processes"), nil
	}
	res, err := ps.ListProcesses(ctx)
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	if len(res.Processes) == 0 {
		return "(no background processes)", nil
	}
	lines := make([]string, len(res.Processes))
	for i, p := range res.Processes {
		lines[i] = fmt.Sprintf("%s  %s%s  %s", p.ProcessID, p.Status, exitSuffix(p.ExitCode), p.Command)
		if p.Description != "" {
			lines[i] += "  # " + p.Description
		}
	}
	return strings.Join(lines, "\n"), nil
}
