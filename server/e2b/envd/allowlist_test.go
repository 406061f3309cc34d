package envd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
)

// TestCheckedCommand: what the allowlist checks is what runs (seccheck26:
// the script of any program named like a shell was checked in its place,
// so /workspace/bin/bash -c ls ran a planted program under an allowlist of
// ls, and bash -i --rcfile F -c ls ran F; the environment was not checked,
// so LD_PRELOAD or BASH_ENV ran anything).
func TestCheckedCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd   string
		args  []string
		env   map[string]string
		want  string
		login bool
	}{
		{"/bin/bash", []string{"-l", "-c", "echo hi | wc -c"}, nil, "echo hi | wc -c", true},
		{"/bin/bash", []string{"-c", "ls", "zero", "one"}, nil, "ls", false},
		{"sh", []string{"-c", "ls"}, nil, "ls", false},
		{"/usr/bin/bash", []string{"--login", "-c", "ls"}, nil, "ls", true},
		{"/bin/bash", []string{"-l", "-c", "ls"}, map[string]string{"HOME": "/home/user", "LD_PRELOAD": "/workspace/x.so", "a.b": "c"}, "HOME= LD_PRELOAD= \nls", true},
		// Not the SDK's shell: the words as they run.
		{"/workspace/bin/bash", []string{"-c", "ls"}, nil, `'/workspace/bin/bash' '-c' 'ls'`, false},
		{"./bash", []string{"-c", "ls"}, nil, `'./bash' '-c' 'ls'`, false},
		{"bash", []string{"-i", "--rcfile", "/workspace/rc", "-c", "ls"}, nil, `'bash' '-i' '--rcfile' '/workspace/rc' '-c' 'ls'`, false},
		{"/bin/bash", []string{"-c"}, nil, `'/bin/bash' '-c'`, false},
		{"python3", []string{"-c", "print('x')"}, nil, `'python3' '-c' 'print('\''x'\'')'`, false},
	}
	for _, tt := range tests {
		got, login := checkedCommand(&process.ProcessConfig{Cmd: tt.cmd, Args: tt.args}, tt.env)
		if got != tt.want || login != tt.login {
			t.Errorf("checkedCommand(%s %q, %v) = %q, %v; want %q, %v", tt.cmd, tt.args, tt.env, got, login, tt.want, tt.login)
		}
	}
}

// TestWithoutProfiles: a login shell's script reads no startup file from
// HOME, the workspace, once withoutProfiles made it; as asked, it does.
func TestWithoutProfiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, f := range []string{".bash_profile", ".profile"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("echo startup-file-ran\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []string{"/bin/bash", "/bin/sh"} {
		cfg := &process.ProcessConfig{Cmd: cmd, Args: []string{"-l", "-c", "echo script-ran"}}
		for _, tt := range []struct {
			cfg     *process.ProcessConfig
			profile bool
		}{{cfg, true}, {withoutProfiles(cfg), false}} {
			line, err := shellCommand(tt.cfg, map[string]string{"HOME": home})
			if err != nil {
				t.Fatal(err)
			}
			c := exec.Command("/bin/sh", "-c", line)
			c.Env = []string{"PATH=/usr/bin:/bin"}
			out, err := c.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "script-ran") || strings.Contains(string(out), "startup-file-ran") != tt.profile {
				t.Errorf("%s %q: %v %s; want the startup file run: %v", tt.cfg.GetCmd(), tt.cfg.GetArgs(), err, out, tt.profile)
			}
		}
		if got := cfg.GetArgs(); len(got) != 3 || got[0] != "-l" {
			t.Errorf("withoutProfiles changed its argument: %q", got)
		}
	}
}
