package objtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/boxkite/boxkite/server/storagesync"
)

// AzuriteKey is Azurite's well-known development account key (public,
// documented by Azure; not a secret).
const AzuriteKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// proc runs a server command, restartable with the same arguments.
type proc struct {
	name string
	args []string
	log  string
	cmd  *exec.Cmd
	// done is closed when the running command has exited.
	done chan struct{}
}

func (p *proc) start() error {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(p.name, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", filepath.Base(p.name), err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

func (p *proc) stop() {
	if p.cmd == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// exited is closed when the running command exits (nil when none runs).
func (p *proc) exited() <-chan struct{} { return p.done }

func startProc(t testing.TB, p *proc) (*proc, error) {
	t.Helper()
	if err := p.start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(p.log); err == nil && len(b) > 0 {
				if len(b) > 4000 {
					b = b[len(b)-4000:]
				}
				t.Logf("objtest: %s log (tail):\n%s", filepath.Base(p.name), b)
			}
		}
	})
	return p, nil
}

func startSeaweed(t testing.TB, pick portPicker) (*Server, error) {
	t.Helper()
	weed := tool(t, "BOXKITE_WEED", filepath.Join("seaweedfs-"+SeaweedFSVersion, "weed"), "SeaweedFS's weed")
	dir := dataDir(t)
	const key, secret = "objtest-access", "objtest-secret"
	conf := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(conf, []byte(`{"identities":[{"name":"objtest","credentials":[{"accessKey":"`+key+`","secretKey":"`+secret+`"}],"actions":["Admin","Read","Write","List","Tagging"]}]}`), 0o600); err != nil {
		return nil, err
	}
	ports, err := pick(8)
	if err != nil {
		return nil, err
	}
	s3 := ports[0]
	args := []string{
		"server", "-dir=" + dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.volumeSizeLimitMB=128", "-volume.max=20",
		"-filer", "-s3", fmt.Sprintf("-s3.port=%d", s3), "-s3.config=" + conf,
		// Off: the S3 server's Iceberg and Lance servers (fixed ports 8181
		// and 9101, which two packages' stores would share), and the
		// master's telemetry (a report to a host that is not loopback).
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false",
	}
	// Every port picked here: weed's default gRPC port, its HTTP port +
	// 10000, could be one another test picked.
	for i, name := range []string{"master", "volume", "filer"} {
		args = append(args, fmt.Sprintf("-%s.port=%d", name, ports[1+i]))
	}
	for i, name := range []string{"master", "volume", "filer", "s3"} {
		args = append(args, fmt.Sprintf("-%s.port.grpc=%d", name, ports[4+i]))
	}
	p, err := startProc(t, &proc{name: weed, log: filepath.Join(dir, "weed.log"), args: args})
	if err != nil {
		return nil, err
	}
	return &Server{
		Config: storagesync.Config{
			Kind: "s3", Endpoint: fmt.Sprintf("http://127.0.0.1:%d", s3), Region: "us-east-1",
			PathStyle: true, AccessKey: key, SecretKey: secret,
		},
		stop: p.stop, start: p.start, exited: p.exited,
	}, nil
}

func startAzurite(t testing.TB, pick portPicker) (*Server, error) {
	t.Helper()
	az := tool(t, "BOXKITE_AZURITE", filepath.Join("azurite-"+AzuriteVersion, "node_modules", ".bin", "azurite-blob"), "Azurite")
	dir := dataDir(t)
	ports, err := pick(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	p, err := startProc(t, &proc{name: az, log: filepath.Join(dir, "azurite.log"), args: []string{
		"--blobHost", "127.0.0.1", "--blobPort", fmt.Sprint(port), "--location", dir,
		"--skipApiVersionCheck", "--loose", "--silent",
	}})
	if err != nil {
		return nil, err
	}
	return &Server{
		Config: storagesync.Config{
			Kind: "azure",
			ConnectionString: fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=%s;BlobEndpoint=http://127.0.0.1:%d/devstoreaccount1;",
				AzuriteKey, port),
		},
		stop: p.stop, start: p.start, exited: p.exited,
		// Azurite's default name for it under --location.
		metadata: filepath.Join(dir, "__azurite_db_blob__.json"),
	}, nil
}

// dataDir is a fresh directory for a store's data, removed when t ends: in
// /dev/shm where there is one, since the emulators fsync each object under
// one lock (fake-gcs-server manages ~110 puts a second on a shared disk),
// which would measure the test machine's disk instead of the sync.
func dataDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "boxkite-objtest-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}
