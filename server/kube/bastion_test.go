package kube_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/testport"
	"github.com/boxkite/boxkite/server/kube"
)

// TestBastionOnKube is `ssh <sandbox-id>@bastion` (docs/bastion.md,
// docs/kubernetes.md#the-bastion) on the kube driver, with the real
// boxkite-bastion and OpenSSH: with a key registered to the account, a
// command runs in the sandbox's pod with stdin streamed byte-exact and
// its exit status passed on, `ssh -t` gives it a terminal, scp (sftp)
// puts a file and gets it back byte-exact, and a sandbox of another
// account is refused. TestInteractiveExec covers the interactive exec
// the bastion runs on; this is the bastion itself in front of it.
func TestBastionOnKube(t *testing.T) {
	for _, tool := range []string{"ssh", "scp", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("OpenSSH's %s: %v", tool, err)
		}
	}
	const bastionKey = "bastion-key-for-kube-tests-0123456789abcdef"
	e := newEnv(t, kube.Config{})
	e.srvCfg.BastionKey = bastionKey
	e.start(t)
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	key := filepath.Join(home, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kube", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSSHKey(ctx, api.AddSSHKeyRequest{PublicKey: string(pub)}); err != nil {
		t.Fatalf("add ssh key: %v", err)
	}
	addr := startBastionProcess(t, e.url, bastionKey)
	host, port, _ := net.SplitHostPort(addr)
	common := []string{
		"-F", "/dev/null", "-o", "UserKnownHostsFile=" + filepath.Join(home, "known_hosts"), "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=accept-new", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "PreferredAuthentications=publickey", "-i", key,
	}
	sshTo := func(id string, stdin []byte, flags []string, command string) (int, string, string) {
		t.Helper()
		args := append(append(append([]string{}, common...), "-p", port), flags...)
		args = append(args, id+"@"+host, command)
		cmd := exec.CommandContext(ctx, "ssh", args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		var stdout, stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("ssh %s: %v", command, err)
		}
		return code, stdout.String(), stderr.String()
	}

	data := bytes.Repeat([]byte("kube\x00\xff\r\n"), 32<<10)
	sum := sha256.Sum256(data)
	code, stdout, stderr := sshTo(sb.ID, data, nil, "cat > ssh.bin && sha256sum ssh.bin && exit 7")
	if code != 7 || !strings.HasPrefix(stdout, hex.EncodeToString(sum[:])) {
		t.Errorf("ssh command: exit %d, stdout %q, stderr %q; want exit 7 and the input's sha256", code, stdout, stderr)
	}
	// In the pod: the API sees the file the ssh command wrote.
	if got := mustExec(t, c, sb.ID, "sha256sum ssh.bin"); !strings.HasPrefix(got, hex.EncodeToString(sum[:])) {
		t.Errorf("the file ssh wrote, read through the API: %q", got)
	}
	if code, stdout, stderr := sshTo(sb.ID, nil, []string{"-tt"}, "test -t 0 && echo on-a-tty"); code != 0 || !strings.Contains(stdout, "on-a-tty") {
		t.Errorf("ssh -tt: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	local := filepath.Join(home, "up.bin")
	if err := os.WriteFile(local, data, 0o600); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(home, "back.bin")
	// A relative path: the test kubelet's pod sees this host's root, with
	// its workspace (a directory of the kubelet's) as the current one.
	for _, args := range [][]string{
		{local, sb.ID + "@" + host + ":scp.bin"},
		{sb.ID + "@" + host + ":scp.bin", back},
	} {
		cmd := exec.CommandContext(ctx, "scp", append(append(append([]string{}, common...), "-P", port), args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scp %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Errorf("scp there and back: %d bytes, %v; want %d byte-exact", len(got), err, len(data))
	}
	if got := mustExec(t, c, sb.ID, "sha256sum scp.bin"); !strings.HasPrefix(got, hex.EncodeToString(sum[:])) {
		t.Errorf("the file scp put, read through the API: %q", got)
	}

	// Another account's sandbox: the key is not its account's.
	tok, err := client.New(e.url, "").Signup(ctx, "other-kube@example.com", "a long enough password 1")
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := client.New(e.url, tok.AccessToken).CreateAPIKey(ctx, api.CreateAPIKeyRequest{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	other := client.New(e.url, otherKey.Key)
	osb, err := other.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := sshTo(osb.ID, nil, nil, "echo reached"); code == 0 || strings.Contains(stdout, "reached") {
		t.Errorf("ssh to another account's sandbox: exit %d, stdout %q; want refused", code, stdout)
	}
}

// startBastionProcess builds boxkite-bastion and runs it against the
// control plane at serverURL until the test ends; it returns its address.
func startBastionProcess(t *testing.T, serverURL, bastionKey string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "boxkite-bastion")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/boxkite/boxkite/cmd/boxkite-bastion").CombinedOutput(); err != nil {
		t.Fatalf("build boxkite-bastion: %v\n%s", err, out)
	}
	keyFile := filepath.Join(dir, "bastion-key")
	if err := os.WriteFile(keyFile, []byte(bastionKey), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := testport.PickN(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cmd := exec.Command(bin, "--listen", addr, "--server", serverURL, "--key-file", keyFile,
		"--host-key", filepath.Join(dir, "host_key"), "--log-level", "debug")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("boxkite-bastion's log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return addr
		}
		select {
		case err := <-exited:
			t.Fatalf("boxkite-bastion exited: %v\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("boxkite-bastion does not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
