package sidecar

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// previewPattern proxies HTTP and WebSocket requests to a port of the
// sandbox's own network namespace, which the sidecar shares with its
// commands (the jail's under the local driver, the pod's under kube): the
// control plane's preview URLs (server/preview) come in through it.
const previewPattern = "/preview/{port}/{path...}"

// previewTransport dials 127.0.0.1 only, whatever the request names.
var previewTransport = &http.Transport{
	Proxy: nil,
	DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := net.Dialer{Timeout: 10 * time.Second}
		return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
	},
	ResponseHeaderTimeout: 5 * time.Minute,
	IdleConnTimeout:       30 * time.Second,
	MaxIdleConnsPerHost:   8,
}

// previewPort is the port of a request for previewPattern; ServeHTTP
// routes those itself.
func previewPort(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/preview/")
	port, _, _ := strings.Cut(rest, "/")
	return port, ok && port != ""
}

func (h *Handler) preview(w http.ResponseWriter, r *http.Request) error {
	ps := r.PathValue("port")
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != ps {
		return api.Invalid("port", "port must be 1 to 65535", "")
	}
	if _, egress, _ := net.SplitHostPort(EgressProxyAddr); ps == egress {
		return api.Errorf(http.StatusForbidden, api.CodeForbidden, "port %d is the egress proxy's, not the sandbox's", port)
	}
	// Keep the path as the client escaped it.
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/preview/"+ps)
	if rest == "" {
		rest = "/"
	}
	rp := &httputil.ReverseProxy{
		Transport:     previewTransport,
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", ps), RawQuery: r.URL.RawQuery}
			if p, err := url.PathUnescape(rest); err == nil {
				u.Path, u.RawPath = p, rest
			}
			pr.Out.URL = u
			// Dev servers accept localhost; X-Forwarded-Host has the public name.
			pr.Out.Host = "localhost:" + ps
			pr.Out.Header.Del(api.HeaderSidecarToken)
			for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v := pr.In.Header.Values(k); len(v) > 0 {
					pr.Out.Header[k] = v
				}
			}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			h.log.DebugContext(r.Context(), "preview upstream", "port", port, "err", err)
			h.writeError(w, r, api.Errorf(http.StatusBadGateway, api.CodePreviewUnreachable, "nothing answers on port %d in the sandbox", port).
				WithHint("start the app so it listens on that port (127.0.0.1 or 0.0.0.0)"))
		},
	}
	rp.ServeHTTP(w, r)
	return nil
}
