//go:build linux && (amd64 || arm64)

package sidecar

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// startWith runs cmd through spawn, or os/exec when viaSpawn is false, with
// stdout in a file, and returns what it wrote, its pid and exit status.
func startWith(t *testing.T, cmd *exec.Cmd, viaSpawn bool) (out string, pid int, ws syscall.WaitStatus) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, f, f
	if viaSpawn {
		var pidfd int
		pid, pidfd, err = spawn(cmd)
		if err != nil {
			t.Fatalf("spawn: %v", err)
		}
		if pidfd < 0 {
			t.Fatalf("spawn gave no pidfd")
		}
		defer syscall.Close(pidfd)
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid = cmd.Process.Pid
		_ = cmd.Wait()
		ws = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b), pid, ws
}

// TestSpawnAsOSExec: a command spawn starts sees what one os/exec starts
// sees: signal dispositions and mask, ids, limits but the runtime's
// raised RLIMIT_NOFILE, directory, environment (the last of a name wins),
// arguments, its own process group; and the exit status is the same.
func TestSpawnAsOSExec(t *testing.T) {
	sys := func() *syscall.SysProcAttr {
		attr := &syscall.SysProcAttr{Setpgid: true}
		if os.Getuid() == 0 {
			attr.Credential = &syscall.Credential{Uid: 1001, Gid: 1002}
		}
		return attr
	}
	dir := traversableTempDir(t)
	command := func(path string, args ...string) *exec.Cmd {
		return &exec.Cmd{
			Path: path, Args: args, Dir: dir,
			Env:         []string{"A=1", "B=2", "A=3", "PATH=/usr/bin:/bin"},
			SysProcAttr: sys(),
		}
	}
	// Read by cat itself, not a shell (dash clears its signal mask).
	proc := func() *exec.Cmd { return command("/bin/cat", "cat", "/proc/self/status", "/proc/self/limits") }
	keep := func(s string) (kept []string) {
		for line := range strings.Lines(s) {
			if strings.HasPrefix(line, "Max ") && !strings.HasPrefix(line, "Max open files") ||
				regexp.MustCompile(`^(Sig(Blk|Ign|Cgt)|Uid|Gid|Groups|NoNewPrivs|Seccomp):`).MatchString(line) {
				kept = append(kept, line)
			}
		}
		return kept
	}
	want, _, _ := startWith(t, proc(), false)
	got, _, _ := startWith(t, proc(), true)
	if diff := cmp.Diff(keep(want), keep(got)); diff != "" || len(keep(got)) < 10 {
		t.Errorf("spawn's command saw otherwise than os/exec's (-os/exec +spawn):\n%s", diff)
	}

	script := `pwd; echo "$A $B $1"; cut -d' ' -f5 /proc/self/stat; exit 7`
	sh := func() *exec.Cmd { return command("/bin/sh", "sh", "-c", script, "sh", "arg") }
	want, wantPid, wantWS := startWith(t, sh(), false)
	got, pid, ws := startWith(t, sh(), true)
	// The last line is cut's process group: the command's pid.
	for _, r := range []struct {
		out string
		pid int
	}{{want, wantPid}, {got, pid}} {
		if w := fmt.Sprintf("%s\n3 2 arg\n%d\n", dir, r.pid); r.out != w {
			t.Errorf("command wrote %q, want %q", r.out, w)
		}
	}
	if ws != wantWS || ws.ExitStatus() != 7 {
		t.Errorf("status %v, os/exec's %v", ws, wantWS)
	}
}

// TestSpawnErrors: a start that fails says why in os/exec's words and
// leaves no child behind.
func TestSpawnErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cmd  exec.Cmd
		want error
	}{
		{"no program", exec.Cmd{Path: "/nonexistent/prog", Args: []string{"prog"}}, syscall.ENOENT},
		{"no directory", exec.Cmd{Path: "/bin/true", Args: []string{"true"}, Dir: "/nonexistent"}, syscall.ENOENT},
		{"not executable", exec.Cmd{Path: "/etc/passwd", Args: []string{"passwd"}}, syscall.EACCES},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.cmd
			cmd.Env = []string{}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stderr, os.Stderr
			_, _, err := spawn(&cmd)
			var pe *os.PathError
			if !errors.As(err, &pe) || pe.Op != "fork/exec" || pe.Path != cmd.Path || !errors.Is(err, tt.want) {
				t.Errorf("spawn: %v, want fork/exec %s: %v", err, cmd.Path, tt.want)
			}
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
				t.Errorf("a child is left: wait4 %v", err)
			}
		})
	}
}

// TestSpawnDeclines: what spawn does not do goes to os/exec.
func TestSpawnDeclines(t *testing.T) {
	for _, tt := range []struct {
		name string
		cmd  exec.Cmd
	}{
		{"no env", exec.Cmd{SysProcAttr: &syscall.SysProcAttr{}}},
		{"no attr", exec.Cmd{Env: []string{}}},
		{"user namespace", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}}},
		{"setsid", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}},
		{"groups", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{Credential: &syscall.Credential{Groups: []uint32{1}}}}},
		{"extra files", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{}, ExtraFiles: []*os.File{os.Stdin}}},
		{"stdout not a file", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{}, Stdin: os.Stdin, Stdout: new(strings.Builder), Stderr: os.Stderr}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.cmd
			cmd.Path, cmd.Args = "/bin/true", []string{"true"}
			if cmd.Stdin == nil {
				cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stderr, os.Stderr
			}
			if _, _, err := spawn(&cmd); err != errNoSpawn {
				t.Errorf("spawn: %v, want errNoSpawn", err)
			}
		})
	}
}
