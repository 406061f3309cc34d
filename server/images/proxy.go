package images

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// packageHosts reads the hosts this machine's apt is configured to use
// (deb822 .sources files and the one-line sources.list format).
// TODO: use the server's egress proxy once it exists, with these hosts as
// the build sandbox's grant.
func packageHosts(aptDir string) []string {
	seen := map[string]bool{}
	var hosts []string
	add := func(raw string) {
		raw = strings.TrimSpace(raw)
		if i := strings.Index(raw, "://"); i >= 0 {
			raw = raw[i+3:]
		} else {
			return
		}
		host, _, _ := strings.Cut(raw, "/")
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if host != "" && !seen[host] {
			seen[host] = true
			hosts = append(hosts, host)
		}
	}
	files, _ := filepath.Glob(filepath.Join(aptDir, "sources.list.d", "*"))
	files = append(files, filepath.Join(aptDir, "sources.list"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			switch {
			case strings.HasPrefix(line, "URIs:"):
				for _, u := range strings.Fields(strings.TrimPrefix(line, "URIs:")) {
					add(u)
				}
			case strings.HasPrefix(line, "deb ") || strings.HasPrefix(line, "deb-src "):
				for _, u := range strings.Fields(line)[1:] {
					if strings.Contains(u, "://") {
						add(u)
						break
					}
				}
			}
		}
	}
	return hosts
}

// proxy is an HTTP proxy that forwards plain requests and CONNECT tunnels
// to allowed hosts only, on port 80 or 443. A build's package managers
// reach the network through it alone.
type proxy struct {
	allowed map[string]bool
	ports   map[string]bool // 80 and 443; tests add their own
	log     func(format string, args ...any)
	tr      *http.Transport
}

func newProxy(hosts []string, log func(string, ...any)) *proxy {
	p := &proxy{
		allowed: map[string]bool{}, ports: map[string]bool{"80": true, "443": true},
		log: log, tr: &http.Transport{Proxy: nil, IdleConnTimeout: 30 * time.Second},
	}
	for _, h := range hosts {
		p.allowed[strings.ToLower(h)] = true
	}
	return p
}

func (p *proxy) permit(hostport, defPort string) (string, bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, defPort
	}
	ok := p.allowed[strings.ToLower(host)] && p.ports[port]
	return net.JoinHostPort(host, port), ok
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "proxy: absolute http URL required", http.StatusBadRequest)
		return
	}
	if _, ok := p.permit(r.URL.Host, "80"); !ok {
		p.log("proxy: refused %s %s\n", r.Method, r.URL.Host)
		http.Error(w, "proxy: host not allowed for image builds", http.StatusForbidden)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Connection")
	out.Header.Del("Proxy-Authorization")
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *proxy) connect(w http.ResponseWriter, r *http.Request) {
	addr, ok := p.permit(r.Host, "443")
	if !ok {
		p.log("proxy: refused CONNECT %s\n", r.Host)
		http.Error(w, "proxy: host not allowed for image builds", http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	up, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	go func() {
		_, _ = io.Copy(up, buf)
		_ = up.Close()
	}()
	_, _ = io.Copy(conn, up)
	_ = conn.Close()
}
