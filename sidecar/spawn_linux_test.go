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
// oomFirst is spawn's.
func startWith(t *testing.T, cmd *exec.Cmd, viaSpawn, oomFirst bool) (out string, pid int, ws syscall.WaitStatus) {
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
		pid, pidfd, err = spawn(cmd, [3]int{int(devNull.Fd()), int(f.Fd()), int(f.Fd())}, oomFirst)
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
	want, _, _ := startWith(t, proc(), false, false)
	got, _, _ := startWith(t, proc(), true, false)
	if diff := cmp.Diff(keep(want), keep(got)); diff != "" || len(keep(got)) < 10 {
		t.Errorf("spawn's command saw otherwise than os/exec's (-os/exec +spawn):\n%s", diff)
	}

	script := `pwd; echo "$A $B $1"; cut -d' ' -f5 /proc/self/stat; exit 7`
	sh := func() *exec.Cmd { return command("/bin/sh", "sh", "-c", script, "sh", "arg") }
	want, wantPid, wantWS := startWith(t, sh(), false, false)
	got, pid, ws := startWith(t, sh(), true, false)
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

// TestSpawnOOMFirst: asked to, spawn's child sets its own oom_score_adj
// to oomFirst's 1000 before it drops its ids, and the caller's, which
// shares the child's memory until execve, stays as it was; not asked, the
// child inherits the caller's.
func TestSpawnOOMFirst(t *testing.T) {
	own, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		oomFirst bool
		want     string
	}{{true, "1000\n"}, {false, string(own)}} {
		cmd := &exec.Cmd{
			Path: "/bin/cat", Args: []string{"cat", "/proc/self/oom_score_adj"}, Env: []string{},
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		}
		if os.Getuid() == 0 {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 1001, Gid: 1002}
		}
		if got, _, _ := startWith(t, cmd, true, tt.oomFirst); got != tt.want {
			t.Errorf("oomFirst %v: the command's oom_score_adj = %q, want %q", tt.oomFirst, got, tt.want)
		}
	}
	if after, err := os.ReadFile("/proc/self/oom_score_adj"); err != nil || string(after) != string(own) {
		t.Errorf("the caller's oom_score_adj = %q (%v), was %q", after, err, own)
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
			_, _, err := spawn(&cmd, [3]int{0, 2, 2}, false)
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
		name  string
		cmd   exec.Cmd
		stdio [3]int
	}{
		{"no env", exec.Cmd{SysProcAttr: &syscall.SysProcAttr{}}, [3]int{}},
		{"no attr", exec.Cmd{Env: []string{}}, [3]int{}},
		{"no setpgid", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{}}, [3]int{}},
		{"user namespace", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}}, [3]int{}},
		{"setsid", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}, [3]int{}},
		{"groups", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{Credential: &syscall.Credential{Groups: []uint32{1}}}}, [3]int{}},
		{"extra files", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{}, ExtraFiles: []*os.File{os.Stdin}}, [3]int{}},
		{"no stdin", exec.Cmd{Env: []string{}, SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}, [3]int{-1, 2, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.cmd
			cmd.Path, cmd.Args = "/bin/true", []string{"true"}
			if _, _, err := spawn(&cmd, tt.stdio, false); err != errNoSpawn {
				t.Errorf("spawn: %v, want errNoSpawn", err)
			}
		})
	}
}
