//go:build linux

package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// BaseDefault is the only base: the host's own system directories.
const BaseDefault = "boxkite-default"

// maxPackages bounds each package list (reference §3.7).
const maxPackages = 100

// Package names: apt name[=version]; pip and npm pinned exactly as the
// reference has it (§3.7), name==version, npm names with an optional
// @scope/.
var (
	aptPackage = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*(=[A-Za-z0-9][A-Za-z0-9.+:~-]*)?$`)
	pipPackage = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*==[A-Za-z0-9][A-Za-z0-9._+-]*$`)
	npmPackage = regexp.MustCompile(`^(@[A-Za-z0-9][A-Za-z0-9._+-]*/)?[A-Za-z0-9][A-Za-z0-9._+-]*==[A-Za-z0-9][A-Za-z0-9._+-]*$`)
)

// systemDirs are the host's top-level directories a build's root is made
// of: each an overlay of the host's with the image's upper dir, or a copied
// symlink. The jail binds the same set by default.
var systemDirs = []string{"usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "etc"}

// stateDirs are overlaid too during a build, so apt and dpkg can write
// their state, but they are not part of the image.
var stateDirs = []string{"var/lib/dpkg", "var/lib/apt", "var/cache/apt", "var/cache/debconf"}

// Validate checks a build spec and returns it canonical: defaults filled
// in, packages sorted and deduplicated.
func Validate(spec api.ImageSpec) (api.ImageSpec, error) {
	if spec.Base == "" {
		spec.Base = BaseDefault
	}
	if spec.Base != BaseDefault {
		return spec, fieldError("base", fmt.Sprintf("base %q is not available on this server", spec.Base), "use boxkite-default: the host's system")
	}
	lists := []struct {
		field string
		pkgs  *[]string
		re    *regexp.Regexp
		form  string
	}{
		{"apt_packages", &spec.AptPackages, aptPackage, "name or name=version"},
		{"python_packages", &spec.PythonPackages, pipPackage, "name==version, pinned"},
		{"npm_packages", &spec.NPMPackages, npmPackage, "name==version or @scope/name==version, pinned"},
	}
	const packageHint = "give one package per entry: jq or jq=1.6-2.1 (apt), pandas==2.2.3 (pip), semver==7.6.3 or @types/node==20.1.0 (npm)"
	total := 0
	for _, l := range lists {
		if len(*l.pkgs) > maxPackages {
			return spec, fieldError(l.field, fmt.Sprintf("%s has more than %d packages", l.field, maxPackages),
				fmt.Sprintf("an image takes at most %d packages of each kind", maxPackages))
		}
		for _, p := range *l.pkgs {
			if len(p) > 200 || !l.re.MatchString(p) {
				return spec, fieldError(l.field, fmt.Sprintf("%q is not a valid package (%s)", p, l.form), packageHint)
			}
		}
		slices.Sort(*l.pkgs)
		*l.pkgs = slices.Compact(*l.pkgs)
		total += len(*l.pkgs)
	}
	if total == 0 {
		return spec, fieldError("apt_packages", "an image needs at least one package",
			"name what to install in apt_packages, python_packages or npm_packages ('boxkite images build --apt-package jq')")
	}
	return spec, nil
}

func fieldError(field, msg, hint string) error {
	return &api.Error{Status: 422, Code: api.CodeValidation, Message: msg, Hint: hint, Details: map[string]any{"field": field}}
}

func specHash(spec api.ImageSpec) string {
	b, _ := json.Marshal(spec)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Build queues a declarative build of spec for account. audit records
// each event of the build in the account's audit log: every egress
// decision ("egress_allow", "egress_deny") and the outcome
// ("image_build_completed", "image_build_failed"). An identical spec the
// account already built or is building returns that image instead
// (created false).
func (m *Manager) Build(ctx context.Context, account, label string, spec api.ImageSpec, audit func(imageID, operation string, detail map[string]any)) (img api.Image, created bool, err error) {
	spec, err = Validate(spec)
	if err != nil {
		return api.Image{}, false, err
	}
	r, created, err := m.admitBuild(ctx, account, label, spec)
	if err != nil || !created {
		return r.Image, false, err
	}
	if audit == nil {
		audit = func(string, string, map[string]any) {}
	}
	m.wg.Go(func() {
		m.finish(context.WithoutCancel(ctx), r, func() error {
			err := m.build(r.ID, spec, audit)
			if f, ok := errors.AsType[*buildFailure](err); ok {
				audit(r.ID, "image_build_failed", map[string]any{"image": r.ID, "code": f.code, "reason": f.msg})
			} else if err == nil {
				audit(r.ID, "image_build_completed", map[string]any{"image": r.ID})
			}
			return err
		})
	})
	return r.Image, true, nil
}

// buildProxyAddr is where a build's package managers find the egress
// proxy, inside the build's own network namespace.
const buildProxyAddr = "127.0.0.1:3128"

// Jailer runs an image build in a jail like a sandbox's:
// server/local.Driver.RunBuild, whose doc says what prepare and out are.
type Jailer interface {
	RunBuild(ctx context.Context, id string, prepare func(hostIDBase int) (jail.Spec, error), out io.Writer) error
}

// WithJailer runs builds in j's jails. Without one, builds fail.
func WithJailer(j Jailer) Option { return func(m *Manager) { m.jailer = j } }

// DefaultBuildTimeout bounds a build (WithBuildTimeout).
const DefaultBuildTimeout = 30 * time.Minute

// WithBuildTimeout kills a build's jail after d.
func WithBuildTimeout(d time.Duration) Option { return func(m *Manager) { m.buildTimeout = d } }

// errBuildTimeout fails a build that ran past its time.
type errBuildTimeout struct{ after time.Duration }

func (e errBuildTimeout) Error() string {
	return fmt.Sprintf("the build ran longer than %v and was stopped", e.after)
}

// errStopped fails a build the server's shutdown (Close) killed.
var errStopped = errors.New("interrupted by a server shutdown")

// errNoJailer fails a build on a Manager without a Jailer.
var errNoJailer = errors.New("image builds need the local driver running as root")

// build installs spec's packages into the image's upper dirs, logging to
// build.log, then mounts the image's root.
//
// The build runs in a jail (jail.Build, through the Jailer) with the same
// user namespace mapping, seccomp filter and cgroup limits as a sandbox,
// its root made of overlays of the host's system directories with the
// image's upper dirs (assembleRoot). Package install scripts run, as the
// jail's root. The jail shares a network namespace this build makes with
// only loopback, where server/egress's proxy listens: the build reaches
// the package hosts the machine is configured to use (Sources.grants) and
// nothing else, and every connection it makes or is refused is written
// to the build log.
func (m *Manager) build(id string, spec api.ImageSpec, audit func(imageID, operation string, detail map[string]any)) error {
	bl, err := m.openBuildLog(id)
	if err != nil {
		return err
	}
	defer bl.f.Close()
	if m.jailer == nil {
		bl.end("build failed: %v\n", errNoJailer)
		return failure(id, errNoJailer, nil, outputSeen{})
	}
	allow := m.sources.grants(len(spec.AptPackages) > 0, len(spec.PythonPackages) > 0, len(spec.NPMPackages) > 0)
	names := make([]string, len(allow))
	for i, g := range allow {
		names[i] = g.String()
	}
	bl.line("egress granted: %s\n", strings.Join(names, ", "))
	out := &outputWatch{w: &lockedWriter{mu: &bl.mu, w: bl.capped}}

	errc := make(chan error, 1)
	go func() { errc <- m.runBuildJail(id, spec, allow, bl.reporter(id, audit), out) }()
	err = <-errc
	if rerr := os.RemoveAll(m.path(id, "build")); err == nil && rerr != nil {
		err = fmt.Errorf("remove build dir: %w", rerr)
	}
	if err != nil {
		bl.end("build failed: %v\n", err)
		bl.mu.Lock()
		f := failure(id, err, bl.refused, out.seen)
		bl.mu.Unlock()
		return f
	}
	if err := m.mountBuilt(id); err != nil {
		bl.end("mount image: %v\n", err)
		return err
	}
	bl.end("build completed\n")
	return nil
}

// A buildLog is an image's build.log while its build runs: what the
// build writes is capped (maxBuildLog), its outcome is not.
type buildLog struct {
	f       *os.File
	mu      sync.Mutex // serialises writes, and guards refused
	capped  *cappedLog
	refused []string // host:port the egress proxy refused, each once
}

// openBuildLog opens image id's build.log for appending.
func (m *Manager) openBuildLog(id string) (*buildLog, error) {
	f, err := os.OpenFile(m.path(id, "build.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open build log: %w", err)
	}
	return &buildLog{f: f, capped: &cappedLog{w: f, left: maxBuildLog}}, nil
}

// line writes to the log within its cap.
func (l *buildLog) line(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.capped, format, args...)
}

// end writes the outcome past the cap: it is what a reader needs.
func (l *buildLog) end(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.f, format, args...)
}

// reporter returns what the egress proxy tells each decision of image
// id's build: a line of the log, an audit entry, and a refusal kept for
// the failure's hint.
func (l *buildLog) reporter(id string, audit func(imageID, operation string, detail map[string]any)) func(egress.Decision) {
	return func(d egress.Decision) {
		op, detail := "egress_deny", map[string]any{"image": id, "host": d.Host, "port": d.Port, "reason": d.Reason}
		if d.Allowed {
			op = "egress_allow"
			l.line("egress allowed: %s:%d (%s)\n", d.Host, d.Port, d.Addr)
		} else {
			l.line("egress refused: %s:%d: %s\n", d.Host, d.Port, d.Reason)
			hp := net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
			l.mu.Lock()
			if !slices.Contains(l.refused, hp) {
				l.refused = append(l.refused, hp)
			}
			l.mu.Unlock()
		}
		if d.Addr.IsValid() {
			detail["address"] = d.Addr.String()
		}
		audit(id, op, detail)
	}
}

// runBuildJail runs image id's build steps in a jail, in namespaces of
// its own with the egress proxy (allow, report) on their loopback, out
// taking its output; the error says why a build was cut short (the
// server's shutdown, the disk limit, the timeout). It locks its goroutine
// to the thread, which it never unlocks: call it on a goroutine of its
// own.
func (m *Manager) runBuildJail(id string, spec api.ImageSpec, allow []egress.Grant, report func(egress.Decision), out io.Writer) error {
	// The build's namespaces are this thread's only; the thread is
	// never unlocked, so it exits with the goroutine and the
	// namespaces, mounts and all, go with it. The runtime starts no
	// thread from a locked one, so the proxy dials from the host's
	// network namespace.
	runtime.LockOSThread()
	ln, err := buildNamespaces()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.proxy.Serve(ln, allow, report) })
	proxyURL := "http://" + buildProxyAddr
	// A build that never ends (a script waiting forever) would hold
	// one of the MaxRunning slots every account's builds share.
	ctx, cancel := context.WithTimeout(m.stop, m.buildTimeout)
	overDisk := m.watchDisk(ctx, id, cancel)
	err = m.jailer.RunBuild(ctx, "build-"+id, func(hostID int) (jail.Spec, error) {
		root, err := m.assembleRoot(id, hostID)
		return jail.Spec{Image: root, Build: &jail.Build{Steps: m.steps(spec, proxyURL), Env: buildEnv(proxyURL)}}, err
	}, out)
	switch {
	case m.stop.Err() != nil:
		err = fmt.Errorf("%w: %w", errStopped, err)
	case overDisk():
		err = fmt.Errorf("%w: %w", errBuildDisk{m.buildDiskLimit}, err)
	case ctx.Err() != nil:
		err = fmt.Errorf("%w: %w", errBuildTimeout{m.buildTimeout}, err)
	}
	cancel()
	_ = ln.Close()
	wg.Wait()
	return err
}

// buildEnv is every build step's environment.
func buildEnv(proxyURL string) []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "HOME=/tmp",
		"http_proxy=" + proxyURL, "https_proxy=" + proxyURL, "HTTP_PROXY=" + proxyURL, "HTTPS_PROXY=" + proxyURL,
		"npm_config_proxy=" + proxyURL, "npm_config_https_proxy=" + proxyURL,
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
	}
}

// lockedWriter serialises the commands' output with the proxy's lines.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// buildNamespaces moves the calling (locked) thread into new mount and
// network namespaces, brings up loopback and listens there for the
// proxy.
func buildNamespaces() (net.Listener, error) {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("enter build namespaces: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make / private: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("bring up loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err == nil {
		err = unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr)
	}
	if err == nil {
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		err = unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
	}
	if err != nil {
		return nil, fmt.Errorf("bring up loopback: %w", err)
	}
	// The socket is made on this thread, so in the build's namespace.
	ln, err := net.Listen("tcp", buildProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for the build proxy: %w", err)
	}
	return ln, nil
}

// steps are the commands that install spec's packages.
func (m *Manager) steps(spec api.ImageSpec, proxyURL string) [][]string {
	var steps [][]string
	if len(spec.AptPackages) > 0 {
		opts := []string{"-o", "Acquire::http::Proxy=" + proxyURL, "-o", "Acquire::https::Proxy=" + proxyURL, "-o", "APT::Sandbox::User=root"}
		steps = append(steps, aptSteps(opts, spec.AptPackages)...)
	}
	if len(spec.PythonPackages) > 0 {
		// The system python's pip: as root it installs under /usr/local,
		// which the image's /usr overlay keeps.
		idx := m.sources.pipIndex()
		argv := []string{
			"python3", "-m", "pip", "install", "--no-cache-dir", "--no-input", "--root-user-action=ignore",
			"--break-system-packages", "--index-url", idx, "--proxy", proxyURL,
			// Wheels only: an sdist would need a compiler and its build
			// backend's own downloads.
			"--only-binary=:all:",
		}
		// pip ignores a plain-http index unless told to trust it; the
		// operator configured this one.
		if u, err := url.Parse(idx); err == nil && u.Scheme == "http" {
			argv = append(argv, "--trusted-host", u.Host)
		}
		steps = append(steps, append(argv, spec.PythonPackages...))
	}
	if len(spec.NPMPackages) > 0 {
		pkgs := make([]string, len(spec.NPMPackages))
		for i, p := range spec.NPMPackages {
			pkgs[i] = strings.Replace(p, "==", "@", 1)
		}
		argv := []string{
			// Install scripts run: the build is jailed like a sandbox,
			// and some packages (agent CLIs) place their binary from
			// one. npm 11's allow-scripts marks the named packages'
			// scripts as reviewed (npm runs unreviewed ones with a
			// warning for now, and denied ones never).
			"npm", "install", "--global", "--prefix", "/usr/local",
			"--no-audit", "--no-fund", "--no-update-notifier",
			"--allow-scripts=" + strings.Join(pkgs, ","),
			"--registry", m.sources.npmRegistry(),
		}
		steps = append(steps, append(argv, pkgs...))
	}
	return steps
}

// aptSteps install pkgs through the proxy named in opts.
func aptSteps(opts, pkgs []string) [][]string {
	return [][]string{
		append(append([]string{"apt-get"}, opts...), "update"),
		append(append(append([]string{"apt-get"}, opts...), "install", "-y", "--no-install-recommends"), pkgs...),
		{"apt-get", "clean"},
	}
}

// mountBuilt makes a built image's rootfs: for each system dir a read-only
// overlay of its upper dir over the host's, mounted in the server's own
// mount namespace so the driver can clone it into jails.
func (m *Manager) mountBuilt(id string) error {
	root := m.path(id, "rootfs")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("create rootfs: %w", err)
	}
	for _, name := range systemDirs {
		fi, err := os.Lstat("/" + name)
		if err != nil {
			continue
		}
		dst := filepath.Join(root, name)
		if fi.Mode()&os.ModeSymlink != 0 {
			dest, err := os.Readlink("/" + name)
			if err != nil {
				return fmt.Errorf("read link /%s: %w", name, err)
			}
			if err := os.Symlink(dest, dst); err != nil && !os.IsExist(err) {
				return fmt.Errorf("copy symlink /%s: %w", name, err)
			}
			continue
		}
		upper := m.path(id, "upper/"+name)
		if err := os.MkdirAll(upper, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", upper, err)
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dst, err)
		}
		_ = unix.Unmount(dst, unix.MNT_DETACH) // a previous server's mount
		opts := "lowerdir=" + upper + ":/" + name
		if err := unix.Mount("overlay", dst, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mount image /%s: %w", name, err)
		}
	}
	return nil
}

// unmountBuilt undoes mountBuilt.
func (m *Manager) unmountBuilt(id string) {
	for _, name := range systemDirs {
		_ = unix.Unmount(m.path(id, "rootfs/"+name), unix.MNT_DETACH)
	}
}

// Logs copies the build log of the account's image id to w. With follow
// it keeps copying, calling flush after each chunk, until the build has
// finished and the log is drained, or ctx ends.
func (m *Manager) Logs(ctx context.Context, account, id string, w io.Writer, follow bool, flush func()) error {
	if _, err := m.load(account, id); err != nil {
		return err
	}
	f, err := os.Open(m.path(id, "build.log"))
	if errors.Is(err, fs.ErrNotExist) {
		f = nil // queued, or an import: no log (yet)
	} else if err != nil {
		return fmt.Errorf("open build log: %w", err)
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for {
		if f == nil {
			if f, err = os.Open(m.path(id, "build.log")); err != nil {
				f = nil
			}
		}
		if f != nil {
			if _, err := io.Copy(w, f); err != nil {
				return err
			}
			flush()
		}
		if !follow {
			return nil
		}
		r, err := m.load(account, id)
		if err != nil {
			return err
		}
		if r.Status == api.ImageCompleted || r.Status == api.ImageFailed {
			if f != nil {
				_, err = io.Copy(w, f) // what was written before the status changed
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}
