package securitytest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

// podUID is the uid and gid a kube sandbox pod runs as (runAsUser,
// runAsGroup and fsGroup of server/kube's pod spec).
const podUID = 1001

// TestPodTokenUnreachable runs boxkite-sidecar as a kube sandbox pod runs
// it, and attacks it from a command as an agent would (docs/security.md,
// finding 26). The pod's container and every command it runs share one
// uid: the restricted Pod Security Standard lets a container neither keep
// CAP_SETUID nor run as root, so a second uid is out of reach, and the
// command can read every file the pod mounts (a kubelet leaves a Secret's
// files root:<fsGroup>, 0440) and signal the sidecar. What it must not get
// is the token the control plane reaches the sidecar with: the pod mounts
// only a boot token, which the driver's claim retires before any command
// runs, and the sidecar is non-dumpable, so its memory, environment and
// descriptors are closed to a process of its own uid.
func TestPodTokenUnreachable(t *testing.T) {
	p := startPodSidecar(t)
	own := hex.EncodeToString(randomBytes(t, 32))
	p.call(t, http.MethodPost, "/claim", p.boot, map[string]string{"token": own}, http.StatusNoContent)

	pid := strconv.Itoa(p.cmd.Process.Pid)
	_, port, err := net.SplitHostPort(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"id -u; id -G",
		"cat " + p.bootFile + "; echo",
		// The sidecar's own state, as its uid sees it: all refused.
		"cat /proc/" + pid + "/environ >/dev/null && echo READ environ",
		"(exec 3</proc/" + pid + "/mem) && echo READ mem",
		"ls /proc/" + pid + "/fd >/dev/null && echo READ fd",
		"grep -l " + own + " /proc/" + pid + "/cmdline /proc/" + pid + "/environ 2>/dev/null",
		// Nor its port: a listener of the same uid could share it with
		// SO_REUSEPORT had the sidecar set that, and take half its
		// connections, the control plane's token with them.
		"python3 -c 'import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); " +
			"s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1); s.bind((\"127.0.0.1\", " + port + ")); s.listen(); print(\"READ port\")'",
		"exit 0",
	}, "\n")
	var res api.ExecResult
	p.callJSON(t, "/exec", own, api.ExecRequest{Command: script, Timeout: 30}, &res)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.ExitCode != 0 || len(lines) != 3 {
		t.Fatalf("the attack script: exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if lines[0] != strconv.Itoa(podUID) {
		t.Errorf("the command runs as uid %s, want the pod's %d", lines[0], podUID)
	}
	read := lines[2]
	if read != p.boot {
		t.Errorf("the command read %q from the mounted token file, want the boot token (readable, as in a pod)", read)
	}
	if strings.Contains(res.Stdout, own) || strings.Contains(res.Stdout, "READ") {
		t.Errorf("the command reached the sidecar's state:\n%s", res.Stdout)
	}
	// What it read opens nothing, over loopback as from inside the pod;
	// the control plane's token does.
	for _, path := range []string{"/process", "/files/raw?path=x"} {
		p.call(t, http.MethodGet, path, read, nil, http.StatusUnauthorized)
	}
	p.call(t, http.MethodPost, "/claim", read, map[string]string{"token": "mine"}, http.StatusUnauthorized)
	p.call(t, http.MethodGet, "/process", own, nil, http.StatusOK)
}

// podSidecar is a boxkite-sidecar serving as in a pod.
type podSidecar struct {
	cmd      *exec.Cmd
	addr     string // 127.0.0.1:port
	boot     string // the mounted token
	bootFile string
	hc       *http.Client
}

// startPodSidecar lays out a pod's volumes in a temporary directory and
// starts the sidecar there with the pod's arguments, as uid podUID with
// podUID as a supplementary group (fsGroup). The Secret's files are as a
// kubelet with fsGroup leaves them: root:podUID, 0440.
func startPodSidecar(t *testing.T) *podSidecar {
	t.Helper()
	bin := servertest.SidecarBinary(t)
	// Not t.TempDir: its parent is 0700, closed to the pod's uid.
	root, err := os.MkdirTemp("", "podtoken-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	secret, ws, tmp := filepath.Join(root, "sidecar"), filepath.Join(root, "workspace"), filepath.Join(root, "tmp")
	for _, d := range []string{secret, ws, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{ws, tmp} {
		if err := os.Chown(d, podUID, podUID); err != nil {
			t.Fatal(err)
		}
	}
	certPEM, keyPEM := selfSigned(t)
	p := &podSidecar{boot: hex.EncodeToString(randomBytes(t, 32)), bootFile: filepath.Join(secret, "boot-token")}
	for name, data := range map[string][]byte{"boot-token": []byte(p.boot), "tls.crt": certPEM, "tls.key": keyPEM} {
		f := filepath.Join(secret, name)
		if err := os.WriteFile(f, data, 0o440); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f, 0, podUID); err != nil {
			t.Fatal(err)
		}
	}
	// The pod's listener, made here and inherited (fd 3), as net.Listen
	// makes it in the sidecar (--listen tcp:…): no port to race for.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	ln.Close() // lf keeps the socket listening
	defer lf.Close()
	p.cmd = exec.Command(bin, "serve", "--listen", "fd:3",
		"--tls-cert", filepath.Join(secret, "tls.crt"), "--tls-key", filepath.Join(secret, "tls.key"),
		"--workspace", ws, "--claimable")
	p.cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "TMPDIR=" + tmp, "BOXKITE_SIDECAR_TOKEN_FILE=" + p.bootFile}
	p.cmd.Dir, p.cmd.ExtraFiles = ws, []*os.File{lf}
	var log bytes.Buffer
	p.cmd.Stdout, p.cmd.Stderr = &log, &log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: podUID, Gid: podUID, Groups: []uint32{podUID}},
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("sidecar log:\n%s", log.String())
		}
	})
	p.hc = &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // as `curl -k` from inside the pod
	}}
	t.Cleanup(p.hc.CloseIdleConnections)
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := p.hc.Get("https://" + p.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			t.Fatalf("the sidecar exited:\n%s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar never answered /health: %v", err)
		}
	}
}

// call sends body (JSON, none when nil) with token and checks the status.
func (p *podSidecar) call(t *testing.T, method, path, token string, body any, want int) []byte {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "https://"+p.addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Errorf("%s %s with a %d-byte token: %s %s, want %d", method, path, len(token), resp.Status, out.String(), want)
	}
	return out.Bytes()
}

// callJSON POSTs body to path with token and decodes the 200 answer.
func (p *podSidecar) callJSON(t *testing.T, path, token string, body, into any) {
	t.Helper()
	if err := json.Unmarshal(p.call(t, http.MethodPost, path, token, body, http.StatusOK), into); err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// selfSigned returns a certificate and key in PEM for 127.0.0.1, as the
// kube driver makes one per pod.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sbx-test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}
