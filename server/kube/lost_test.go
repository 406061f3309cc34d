package kube_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

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
