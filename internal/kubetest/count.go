package kubetest

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Requests records the API requests a client made: "VERB resource", the
// verb as the API server's audit log names it (get, list, watch, create,
// update, patch, delete) and the resource the last collection of the path
// (pods, secrets, …).
type Requests struct {
	mu   sync.Mutex
	seen []string
}

// Take returns the requests recorded since the last Take and forgets them.
func (r *Requests) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

func (r *Requests) add(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, requestVerb(req))
}

// requestVerb names req "VERB resource": /api/v1/namespaces/ns/pods is a
// collection (list, or watch with ?watch), …/pods/name one object (get),
// …/pods/name/status a subresource.
func requestVerb(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// Past the group and version: /api/v1/… or /apis/group/version/….
	rest := parts
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) > 2 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	resource, named := "", false
	if len(rest) > 0 {
		resource, named = rest[0], len(rest) > 1
		if len(rest) > 2 {
			resource += "/" + rest[2]
		}
	}
	verb := strings.ToLower(req.Method)
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	}
	return verb + " " + resource
}

// CountingClient is a client with the cluster's admin access that records
// every request it makes in the Requests returned with it.
func (c *Cluster) CountingClient(t testing.TB) (kubernetes.Interface, *Requests) {
	t.Helper()
	reqs := &Requests{}
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			reqs.add(req)
			return rt.RoundTrip(req)
		})
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kubetest: counting client: %v", err)
	}
	return client, reqs
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
