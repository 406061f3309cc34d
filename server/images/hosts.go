//go:build linux

package images

import (
	"bufio"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/boxkite/boxkite/server/egress"
)

// Package indexes a build uses when the machine names none.
const (
	defaultPipIndex    = "https://pypi.org/simple"
	defaultNPMRegistry = "https://registry.npmjs.org/"
)

// pypiFiles serves the files pypi.org's index links to.
const pypiFiles = "files.pythonhosted.org"

// Sources are where the machine's package managers are configured to
// fetch from; a build's egress is limited to their hosts.
type Sources struct {
	// AptDir is apt's configuration, normally /etc/apt. Another directory
	// is also what the build's apt uses, in place of the host's /etc/apt.
	AptDir      string
	PipIndex    string // pip's index URL ("" means pip.conf's, else PyPI)
	NPMRegistry string // npm's registry URL ("" means npmrc's, else npmjs.org)
}

// WithSources overrides where builds fetch packages from.
func WithSources(s Sources) Option { return func(m *Manager) { m.sources = s } }

// WithProxy makes builds reach package hosts through p (its resolver and,
// in tests only, its Permit); the default is a plain egress.Proxy.
func WithProxy(p *egress.Proxy) Option { return func(m *Manager) { m.proxy = p } }

// MirrorAddr is the build proxy's egress.Proxy.Permit. A build's grants
// are the operator's own package sources, never a user's, and a mirror
// may well be on a private or otherwise reserved network (this machine's
// resolve to a documentation range); so a build may reach any address of
// them but the host itself (loopback), link-local and metadata ones.
func MirrorAddr(a netip.Addr) bool {
	a = a.Unmap()
	return !a.IsLoopback() && !a.IsLinkLocalUnicast() && !a.IsUnspecified() && !a.IsMulticast() &&
		!a.IsLinkLocalMulticast() && a != awsMetadataV6 && !strings.HasPrefix(egress.Forbidden(a), "embedded")
}

var awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")

// pipIndex returns the index URL pip is configured with.
func (s Sources) pipIndex() string {
	if s.PipIndex != "" {
		return s.PipIndex
	}
	for _, f := range []string{"/etc/pip.conf", "/etc/xdg/pip/pip.conf"} {
		if v := iniValue(f, "index-url"); v != "" {
			return v
		}
	}
	return defaultPipIndex
}

// npmRegistry returns the registry npm is configured with.
func (s Sources) npmRegistry() string {
	if s.NPMRegistry != "" {
		return s.NPMRegistry
	}
	files := []string{"/usr/etc/npmrc", "/etc/npmrc"}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".npmrc"))
	}
	reg := defaultNPMRegistry
	for _, f := range files { // later files win, as in npm
		if v := iniValue(f, "registry"); v != "" {
			reg = v
		}
	}
	return reg
}

// iniValue returns key's value in an ini-like file (pip.conf, npmrc),
// whatever its section; "" if none.
func iniValue(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	val := ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.TrimSpace(k) == key {
			val = strings.TrimSpace(v)
		}
	}
	return val
}

// grants returns what a build of spec may reach: the hosts of the apt
// sources, and of pip's index and npm's registry when it installs such
// packages, each on the port of its URL (80 or 443 by default).
func (s Sources) grants(aptPkgs, pipPkgs, npmPkgs bool) egress.Allowlist {
	var urls []string
	if aptPkgs {
		urls = append(urls, aptSources(s.AptDir)...)
	}
	if pipPkgs {
		idx := s.pipIndex()
		urls = append(urls, idx)
		if u, err := url.Parse(idx); err == nil && u.Hostname() == "pypi.org" {
			urls = append(urls, "https://"+pypiFiles+"/")
		}
	}
	if npmPkgs {
		urls = append(urls, s.npmRegistry())
	}
	seen := map[egress.Grant]bool{}
	var out egress.Allowlist
	for _, raw := range urls {
		g, ok := grantOf(raw)
		if ok && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}

// grantOf turns a source URL into the grant it needs.
func grantOf(raw string) (egress.Grant, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Hostname() == "" {
		return egress.Grant{}, false
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	} else if u.Scheme != "http" {
		return egress.Grant{}, false
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return egress.Grant{}, false
		}
		port = n
	}
	g, err := egress.ParseGrant(net.JoinHostPort(u.Hostname(), strconv.Itoa(port)))
	return g, err == nil
}

// aptSourcePart is a file name apt reads in sources.list.d: anything
// else there (a .disabled, .save or .dpkg-old file) apt ignores.
var aptSourcePart = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.(list|sources)$`)

// aptSources reads the URIs this machine's apt will use: sources.list and
// the .list (one-line) and .sources (deb822) files of sources.list.d, as
// apt picks them, leaving out deb822 entries marked "Enabled: no".
func aptSources(aptDir string) []string {
	var uris []string
	list, err := os.ReadFile(filepath.Join(aptDir, "sources.list"))
	if err == nil {
		uris = append(uris, oneLineSources(string(list))...)
	}
	entries, _ := os.ReadDir(filepath.Join(aptDir, "sources.list.d"))
	for _, e := range entries { // sorted by name, as apt reads them
		if !aptSourcePart.MatchString(e.Name()) || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(aptDir, "sources.list.d", e.Name()))
		if err != nil {
			continue
		}
		if strings.HasSuffix(e.Name(), ".sources") {
			uris = append(uris, deb822Sources(string(b))...)
		} else {
			uris = append(uris, oneLineSources(string(b))...)
		}
	}
	return uris
}

// oneLineSources returns the URI of each "deb" or "deb-src" line, after
// its [options], if any.
func oneLineSources(text string) []string {
	var uris []string
	for line := range strings.Lines(text) {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) < 2 || (fields[0] != "deb" && fields[0] != "deb-src") {
			continue
		}
		rest := fields[1:]
		if strings.HasPrefix(rest[0], "[") { // options run to the field ending in "]"
			for len(rest) > 0 && !strings.HasSuffix(rest[0], "]") {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				rest = rest[1:]
			}
		}
		if len(rest) > 0 {
			uris = append(uris, rest[0])
		}
	}
	return uris
}

// deb822Sources returns the URIs of each stanza of a .sources file that
// is not disabled. Field names are case-insensitive; a value continues on
// lines starting with white space; "#" starts a comment line.
func deb822Sources(text string) []string {
	var uris []string
	var stanza map[string]string
	field := ""
	flush := func() {
		if stanza != nil && !isNo(stanza["enabled"]) {
			uris = append(uris, strings.Fields(stanza["uris"])...)
		}
		stanza, field = nil, ""
	}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if field != "" {
				stanza[field] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			if stanza == nil {
				stanza = map[string]string{}
			}
			field = strings.ToLower(strings.TrimSpace(k))
			stanza[field] = strings.TrimSpace(v)
		}
	}
	flush()
	return uris
}

// isNo reports whether a deb822 boolean is false, as apt reads one.
func isNo(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "no", "false", "without", "off", "disable":
		return true
	}
	return false
}
