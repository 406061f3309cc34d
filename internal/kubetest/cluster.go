// Package kubetest runs a real Kubernetes API server for tests: etcd and
// kube-apiserver (built by hack/kubetools/build.sh into $BOXKITE_KUBE_ASSETS)
// on loopback, plus a test kubelet (Kubelet) that runs each scheduled pod's
// boxkite-sidecar as a local process. One cluster is shared by every test
// of a binary (Shared); wrap the package's TestMain with Main to stop it.
package kubetest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/testport"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// AssetsEnv names the directory holding the kube-apiserver, etcd and
// kubectl binaries (hack/kubetools/build.sh DESTDIR). Unset, the default
// cache directory ($HOME/.cache/boxkite-kube) is tried. Missing binaries
// skip the kube tests, except in CI (CI set), where they fail them.
const AssetsEnv = "BOXKITE_KUBE_ASSETS"

// Cluster is a running etcd and kube-apiserver on loopback.
type Cluster struct {
	Config     *rest.Config         // admin (system:masters) access
	Client     kubernetes.Interface // built from Config
	Kubeconfig string               // a kubeconfig file with the same access
	Assets     string               // the directory with the binaries (kubectl included)
	dir        string               // certificates, tokens, etcd data, logs
	procs      []*proc              // etcd, then the apiserver
	logs       map[string]*os.File  // by process name
}

// Assets returns the directory with the kube binaries, or skips t (fails
// it in CI) when they are missing.
func Assets(t testing.TB) string {
	t.Helper()
	dir, err := findAssets()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kubetest: %v; CI must build them (.ci/run runs hack/kubetools/build.sh)", err)
		}
		t.Skipf("kubetest: %v (build them with hack/kubetools/build.sh DIR and set %s=DIR)", err, AssetsEnv)
	}
	return dir
}

func findAssets() (string, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%s is not set", AssetsEnv)
		}
		dir = filepath.Join(home, ".cache", "boxkite-kube")
	}
	for _, bin := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("no %s in %s (%s)", bin, dir, AssetsEnv)
		}
	}
	return dir, nil
}

// shared is the one cluster of this test binary: starting one costs
// seconds and half a gigabyte, so every test shares it (each in its own
// namespace) and Main stops it.
var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// Shared returns the test binary's cluster, starting it on first use.
// Tests isolate themselves with Namespace.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	assets := Assets(t)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.cluster, shared.err = Start(ctx, assets)
	})
	if shared.err != nil {
		t.Fatalf("kubetest: %v", shared.err)
	}
	return shared.cluster
}

// Main runs the tests and then stops the shared cluster, if one started.
// Use it as TestMain: func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.cluster != nil {
		shared.cluster.Stop()
	}
	return code
}

// errExited is a start's answer when etcd or kube-apiserver exits before
// it is ready: a port of its own taken between the pick and the bind, since
// ports are picked by hand (internal/testport) and another test may hold one.
var errExited = errors.New("exited before it was ready")

// startAttempts bounds how often etcd and kube-apiserver are started
// again, on fresh ports, after one of them exited at start.
const startAttempts = 5

// portPicker returns n distinct ports to listen on.
type portPicker func(n int) ([]int, error)

// Start starts etcd and kube-apiserver from assets on free loopback ports
// and returns once the API server is ready. Stop ends both. A process that
// exits before it is ready (a port taken between the pick and the bind)
// is started again, with its partner, on other ports.
func Start(ctx context.Context, assets string) (c *Cluster, err error) {
	return start(ctx, assets, testport.PickN)
}

func start(ctx context.Context, assets string, pick portPicker) (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	c = &Cluster{Assets: assets, dir: dir, logs: map[string]*os.File{}}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w%s", err, c.tail())
			c.Stop()
			c = nil
		}
	}()
	creds, err := writeCredentials(dir)
	if err != nil {
		return c, err
	}
	for attempt := 1; ; attempt++ {
		ports, err := pick(3)
		if err != nil {
			return c, err
		}
		err = c.startProcs(ctx, creds, ports, attempt)
		if err == nil {
			break
		}
		if !errors.Is(err, errExited) || attempt == startAttempts {
			return c, fmt.Errorf("%w (attempt %d)", err, attempt)
		}
		c.stopProcs()
	}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		return c, fmt.Errorf("build client: %w", err)
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kubeconfig(c.Config.Host, creds), 0o600); err != nil {
		return c, fmt.Errorf("write kubeconfig: %w", err)
	}
	return c, nil
}

// startProcs starts etcd on ports[0] (clients) and ports[1] (peers), its
// data in a directory of this attempt's, and kube-apiserver on ports[2],
// and waits until the API server is ready.
func (c *Cluster) startProcs(ctx context.Context, creds credentials, ports []int, attempt int) error {
	etcdURL, err := c.startEtcd(ctx, ports[0], ports[1], filepath.Join(c.dir, "etcd-"+strconv.Itoa(attempt)))
	if err != nil {
		return err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(ports[2])
	dir := c.dir
	if err := c.spawn("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--tls-cert-file="+filepath.Join(dir, "serving.crt"),
		"--tls-private-key-file="+filepath.Join(dir, "serving.key"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/24",
		"--allow-privileged=true",
		// A loopback advertise address is refused by the endpoint
		// reconciler, and nothing here needs the kubernetes Service.
		"--endpoint-reconciler-type=none",
		"--cert-dir="+filepath.Join(dir, "certs"),
	); err != nil {
		return err
	}
	c.Config = &rest.Config{
		Host:            host,
		BearerToken:     creds.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: creds.caPEM},
		QPS:             1000, Burst: 2000, // tests create pods in bursts
	}
	return c.waitReady(ctx, creds)
}

func (c *Cluster) startEtcd(ctx context.Context, client, peer int, dataDir string) (string, error) {
	clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	if err := c.spawn("etcd",
		"--data-dir="+dataDir,
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", // durability is worthless for a test cluster
	); err != nil {
		return "", err
	}
	return clientURL, poll(ctx, "etcd", func() bool {
		resp, err := http.Get(clientURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, c.procs[len(c.procs)-1])
}

func (c *Cluster) waitReady(ctx context.Context, creds credentials) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(creds.caPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 2 * time.Second}
	return poll(ctx, "kube-apiserver", func() bool {
		req, _ := http.NewRequest(http.MethodGet, c.Config.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+creds.token)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, c.procs[len(c.procs)-1])
}

// proc is a process spawn started; done is closed once it has exited and
// cmd.ProcessState may be read.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// poll calls ready until it is true, the process exits, or ctx ends.
func poll(ctx context.Context, what string, ready func() bool, p *proc) error {
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s %w: %v", what, errExited, p.cmd.ProcessState)
		default:
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// spawn starts assets/name with args, its output in a log file. The
// process dies with the test binary (Pdeathsig), so a crashed test leaves
// nothing running.
func (c *Cluster) spawn(name string, args ...string) error {
	log, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.logs[name] = log
	cmd := exec.Command(filepath.Join(c.Assets, name), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	c.procs = append(c.procs, p)
	go func() {
		defer close(p.done)
		_ = cmd.Wait()
	}()
	return nil
}

// tail returns the end of each process's log, to explain a failed start.
func (c *Cluster) tail() string {
	var b bytes.Buffer
	for name, f := range c.logs {
		data, _ := os.ReadFile(f.Name())
		if len(data) > 2000 {
			data = data[len(data)-2000:]
		}
		fmt.Fprintf(&b, "\n--- %s log (end):\n%s", name, data)
	}
	return b.String()
}

// Stop kills the API server and etcd and removes their files.
func (c *Cluster) Stop() {
	c.stopProcs()
	os.RemoveAll(c.dir)
}

// stopProcs kills the API server and etcd and closes their logs, for
// Stop or for another start.
func (c *Cluster) stopProcs() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	c.procs = nil
	for _, f := range c.logs {
		f.Close()
	}
}

// Namespace creates a fresh namespace for t, with the default
// ServiceAccount that admission requires (no controller-manager runs to
// create it), and returns its name. Namespaces are left behind: without
// the namespace controller their deletion would never finish, and the
// cluster goes when the test binary ends.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "t-" + hex.EncodeToString(b)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: create namespace: %v", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if _, err := c.Client.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: create service account: %v", err)
	}
	return name
}

type credentials struct {
	token string
	caPEM []byte
}

// writeCredentials writes a CA and a serving certificate for 127.0.0.1,
// the service-account signing key, and a token file with one admin token.
func writeCredentials(dir string) (credentials, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return credentials{}, fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubetest-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return credentials{}, fmt.Errorf("create CA: %w", err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return credentials{}, fmt.Errorf("generate serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return credentials{}, fmt.Errorf("create serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return credentials{}, fmt.Errorf("marshal serving key: %w", err)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return credentials{}, fmt.Errorf("generate service-account key: %w", err)
	}
	saDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return credentials{}, fmt.Errorf("marshal service-account key: %w", err)
	}
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	creds := credentials{
		token: hex.EncodeToString(tok),
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}
	files := map[string][]byte{
		"serving.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"serving.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		"sa.key":      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saDER}),
		"tokens.csv":  []byte(creds.token + ",kubetest-admin,kubetest-admin,system:masters\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return credentials{}, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return creds, nil
}

// kubeconfig renders a kubeconfig for the admin token.
func kubeconfig(host string, creds credentials) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: kubetest
  context: {cluster: kubetest, user: admin}
current-context: kubetest
`, host, base64.StdEncoding.EncodeToString(creds.caPEM), creds.token)
}
