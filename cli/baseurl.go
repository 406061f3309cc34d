package cli

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// checkBaseURL accepts the base URL of a control plane: absolute http(s)
// with a host name or IP address, an optional port in 1-65535 and an
// optional path (a reverse proxy's prefix); nothing that a request could
// not be built from (spaces, control characters) and nothing that has no
// place in a base URL (user info, query, fragment).
func checkBaseURL(s string) error {
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("the URL has a space or control character at byte %d", i+1)
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the scheme must be http or https")
	case u.Opaque != "" || u.Host == "":
		return errors.New("the URL has no host")
	case u.User != nil:
		return errors.New("the URL holds a user name or password; give the API key with --api-key or 'boxkite login'")
	case u.RawQuery != "" || u.ForceQuery:
		return errors.New("the URL has a query (?…); give the server's address only")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return errors.New("the URL has a fragment (#…); give the server's address only")
	}
	if err := checkHostName(u.Hostname()); err != nil {
		return err
	}
	return checkPort(u.Host, u.Port())
}

// checkHostName accepts an IP address or a DNS name: dot-separated labels
// of letters, digits, '-' and '_', none empty or starting or ending with
// '-' (one trailing dot allowed).
func checkHostName(h string) error {
	if h == "" {
		return errors.New("the URL has no host")
	}
	if net.ParseIP(h) != nil {
		return nil
	}
	for l := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		ok := l != "" && !strings.HasPrefix(l, "-") && !strings.HasSuffix(l, "-") &&
			strings.IndexFunc(l, func(r rune) bool {
				return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_'
			}) < 0
		if !ok {
			return fmt.Errorf("%q is not a valid host name", h)
		}
	}
	return nil
}

// checkPort accepts no port, or one in 1-65535; host is the URL's host
// with its port, to catch an empty one ("example.com:").
func checkPort(host, port string) error {
	if port == "" {
		if strings.HasSuffix(host, ":") {
			return errors.New("the URL's port is empty")
		}
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %s is out of range (1-65535)", port)
	}
	return nil
}
