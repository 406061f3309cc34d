package secrets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
)

// normalizeHost returns an allowed_hosts entry in its stored form: a
// lower-case DNS name without a trailing dot, or an IP address. Ports,
// schemes, paths and wildcards are refused: a secret names the hosts it
// may be sent to, exactly.
func normalizeHost(s string) (string, error) {
	h := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		if a.Zone() != "" {
			return "", errors.New("an address with a zone")
		}
		return a.Unmap().String(), nil
	}
	switch {
	case h == "":
		return "", errors.New("empty")
	case len(h) > 253:
		return "", errors.New("longer than 253 characters")
	case strings.Contains(h, "://"):
		return "", errors.New("a URL; give the host name alone")
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("not a host name (empty or overlong label)")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("not a host name (%q is not allowed)", c)
			}
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "", errors.New("not a host name (a label starts or ends with '-')")
		}
	}
	return h, nil
}

// hostOf returns the host part of a URL's Host in stored form.
func hostOf(u string) string {
	h := u
	if hh, _, err := net.SplitHostPort(u); err == nil {
		h = hh
	}
	n, err := normalizeHost(h)
	if err != nil {
		return ""
	}
	return n
}

// resolve returns host's addresses, refusing the whole host when any of
// them is one the broker never reaches: a name that also resolves to a
// private address could be steered there at the next lookup.
func (s *Service) resolve(ctx context.Context, host string) ([]netip.Addr, string, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		as, err := s.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, "", err
		}
		if len(as) == 0 {
			return nil, "", fmt.Errorf("%s has no address", host)
		}
		addrs = as
	}
	local, err := s.local()
	if err != nil {
		return nil, "", err
	}
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		if why := egress.Refusal(a, local); why != "" && (s.permit == nil || !s.permit(a)) {
			return nil, why, nil
		}
	}
	return addrs, "", nil
}

// checkHosts validates a request's allowed_hosts and returns them in
// stored form: each a host name or address, resolving only to public
// addresses.
func (s *Service) checkHosts(ctx context.Context, hosts []string) ([]string, error) {
	if len(hosts) == 0 {
		return nil, hostError(api.CodeInvalidAllowedHost, "allowed_hosts must name at least one host",
			`give the hosts the secret may be sent to, e.g. ["api.example.com"]`)
	}
	if len(hosts) > api.MaxSecretAllowedHosts {
		return nil, hostError(api.CodeInvalidAllowedHost, fmt.Sprintf("allowed_hosts has more than %d hosts", api.MaxSecretAllowedHosts), "")
	}
	out := make([]string, 0, len(hosts))
	seen := map[string]bool{}
	for _, h := range hosts {
		n, err := normalizeHost(h)
		if err != nil {
			return nil, hostError(api.CodeInvalidAllowedHost, fmt.Sprintf("allowed host %q is %v", h, err),
				`give a host name such as "api.example.com": no scheme, port, path or wildcard`)
		}
		_, why, err := s.resolve(ctx, n)
		if err != nil {
			return nil, hostError(api.CodeInvalidAllowedHost, fmt.Sprintf("allowed host %q does not resolve", h),
				"check the name; the server must be able to look it up when the secret is saved")
		}
		if why != "" {
			return nil, hostError(api.CodeUnsafeAllowedHost, fmt.Sprintf("allowed host %q resolves to %s", h, why),
				"the broker never sends secrets to private, loopback, link-local or metadata addresses, nor to the server's host")
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, nil
}

func hostError(code, msg, hint string) *api.Error {
	e := &api.Error{
		Status: http.StatusUnprocessableEntity, Code: code, Message: msg, Hint: hint,
		Details: []api.FieldError{{Loc: []string{"body", "allowed_hosts"}, Msg: msg, Type: code}},
	}
	if e.Hint == "" {
		e.Hint = "correct allowed_hosts and send the request again"
	}
	return e
}
