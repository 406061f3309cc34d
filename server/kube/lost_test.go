package kube_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// cutProxy forwards TCP from a loopback port to the API server and can
// cut the control plane off from it (cut) and let it through again (mend)
// on the same port.
type cutProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func (p *cutProxy) mend() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestLostAfterWatchGap: a sandbox whose pod goes while the server's
// watch of the namespace is down (the server cut off from the API server)
// is marked lost once the watch is back. No event tells: the pod is gone
// from the list the new watch starts from, and the sandbox stayed active,
// with no pod, until the server restarted. And within one watch, a
// sandbox whose pod from a resume goes is marked lost, though its pause
// ended a pod of it before.
func TestLostAfterWatchGap(t *testing.T) {
	e := newEnv(t, kube.Config{SnapshotDir: t.TempDir()})
	admin := e.cluster.Client
	p := &cutProxy{t: t, addr: "127.0.0.1:0", target: strings.TrimPrefix(e.cluster.Config.Host, "https://")}
	p.mend()
	t.Cleanup(p.cut)
	cfg := rest.CopyConfig(e.cluster.Config)
	cfg.Host = "https://" + p.addr
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	through := *e.cluster
	through.Client = cs // the control plane's client goes through p
	e.cluster = &through
	e.start(t)
	ctx := context.Background()
	c := e.client()
	lost := func(t *testing.T, what, id string) {
		t.Helper()
		waitFor(t, what+" to be marked lost", func() bool {
			sb, err := c.Sandbox(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return sb.Status == api.StatusLost
		})
	}

	t.Run("pod gone while cut off", func(t *testing.T) {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		p.cut()
		if err := admin.CoreV1().Pods(e.ns).Delete(ctx, "sbx-"+sb.ID, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the pod to be gone", func() bool {
			_, err := admin.CoreV1().Pods(e.ns).Get(ctx, "sbx-"+sb.ID, metav1.GetOptions{})
			return err != nil
		})
		p.mend()
		lost(t, "the sandbox whose pod went while the server was cut off", sb.ID)
	})

	t.Run("resumed pod gone", func(t *testing.T) {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PauseSandbox(ctx, sb.ID, api.PauseFilesystem); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ResumeSandbox(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, sb.ID, "true")
		list, err := admin.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + sb.ID})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("pods of the resumed sandbox: %v, %v; want one", list, err)
		}
		if err := admin.CoreV1().Pods(e.ns).Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		lost(t, "the resumed sandbox whose pod went", sb.ID)
	})
}

// watchFreezer holds back what watches of the API server send while it
// is frozen, as a watch sitting on a dead connection does: its events
// neither arrive nor fail (client-go's health check ends such a
// connection 30 to 45 s in). Other requests go through.
type watchFreezer struct {
	mu     sync.Mutex
	thawed chan struct{} // closed while not frozen
}

func newWatchFreezer() *watchFreezer {
	f := &watchFreezer{thawed: make(chan struct{})}
	close(f.thawed)
	return f
}

func (f *watchFreezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.thawed:
		f.thawed = make(chan struct{})
	default:
	}
}

func (f *watchFreezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.thawed:
	default:
		close(f.thawed)
	}
}

func (f *watchFreezer) wait() {
	f.mu.Lock()
	thawed := f.thawed
	f.mu.Unlock()
	<-thawed
}

// wrap is a rest.Config's WrapTransport: the body of each watch's answer
// keeps what it read while frozen until the thaw.
func (f *watchFreezer) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" {
			resp.Body = &frozenBody{ReadCloser: resp.Body, f: f}
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (fn roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return fn(req) }

type frozenBody struct {
	io.ReadCloser
	f *watchFreezer
}

func (b *frozenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.f.wait()
	return n, err
}

// TestLostInWatchStall: a sandbox created and then gone while the
// server's watch of the pods is stalled (a dead connection, which sends
// nothing and fails only once client-go's health check ends it) is
// marked lost by the sweep of active sandboxes against the pods, the
// watch still stalled. The watch alone never told: no event came, and
// the list its next start makes never had the pod, so the sandbox stayed
// active, with no pod, until the server restarted.
func TestLostInWatchStall(t *testing.T) {
	e := newEnv(t, kube.Config{LostSweep: 200 * time.Millisecond})
	f := newWatchFreezer()
	f.freeze() // from the start: the server's first watch is stalled too
	t.Cleanup(f.thaw)
	cfg := rest.CopyConfig(e.cluster.Config)
	cfg.Wrap(f.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := e.cluster.Client
	through := *e.cluster
	through.Client = cs // the control plane's client; the kubelet keeps its own
	e.cluster = &through
	e.start(t)
	ctx := context.Background()
	c := e.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().Pods(e.ns).Delete(ctx, "sbx-"+sb.ID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sandbox whose pod went in the watch's stall to be marked lost", func() bool {
		got, err := c.Sandbox(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == api.StatusLost
	})
}
