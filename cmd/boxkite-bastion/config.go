package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/boxkite/boxkite/internal/secretfile"
)

const envPrefix = "BOXKITE_BASTION_"

// bastionKeyEnv carried the secret shared with boxkite-server
// (Config.BastionKey) in older versions. It is refused: a process's
// initial environment stays readable in /proc/<pid>/environ for as long
// as it runs, whatever os.Unsetenv does. The key comes from --key-file
// (BOXKITE_BASTION_KEY_FILE), as `boxkite up` and the Helm chart pass it.
const bastionKeyEnv = "BOXKITE_BASTION_KEY"

// minBastionKeyLen is the server's own minimum (server.Config.BastionKey).
const minBastionKeyLen = 32

// Defaults, as the reference's bastion.
const (
	defaultListen       = ":2222"
	defaultMaxPerSource = 10
	defaultMaxStartups  = 100 // sshd refuses every connection past its MaxStartups' 100
	defaultLoginTimeout = 30 * time.Second
	maxAuthTries        = 5 // failed attempts per connection
)

// options are the bastion's settings.
type options struct {
	listen       string
	server       string // the control plane's base URL
	hostKey      string // file; "" means an ephemeral key
	maxPerSource int
	maxStartups  int
	loginTimeout time.Duration
	logLevel     string
	keyFile      string // the bastion key's file; "" means bastionKeyEnv
	bastionKey   string
}

// usageError is a bad flag or value: exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// envName is the environment twin of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseOptions reads flags, then the environment for flags not given.
func parseOptions(args []string, getenv func(string) string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("boxkite-bastion", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.listen, "listen", defaultListen, "address to accept SSH connections on")
	fs.StringVar(&o.server, "server", "", "the control plane's URL, e.g. http://127.0.0.1:8090 (required)")
	fs.StringVar(&o.hostKey, "host-key", "", "host key file, created (ed25519) when missing; unset means a new key every start")
	fs.IntVar(&o.maxPerSource, "max-per-source", defaultMaxPerSource, "concurrent connections allowed from one source: an IPv4 address, or an IPv6 /64")
	fs.IntVar(&o.maxStartups, "max-startups", defaultMaxStartups, "unauthenticated connections allowed at once in all; past it new connections are closed at once (sshd's MaxStartups)")
	fs.DurationVar(&o.loginTimeout, "login-timeout", defaultLoginTimeout, "time a connection has to authenticate")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.keyFile, "key-file", "", "file holding the bastion key shared with the server; readable by its owner only (mode 0600), or /dev/fd/N (required)")
	fs.VisitAll(func(f *flag.Flag) { f.Usage += " [env " + envName(f.Name) + "]" })
	fs.Usage = func() {
		fmt.Fprintf(out, `Usage: boxkite-bastion [flags]

boxkite-bastion lets people reach sandboxes over SSH:
  ssh <sandbox-id>@host -p 2222          the sandbox's shared terminal
  ssh <sandbox-id>@host -p 2222 'cmd'    run cmd (stdin streamed; a PTY with -t),
                                         exit with its status
  scp -P 2222 f <sandbox-id>@host:/workspace/   sftp, scp and rsync too
It authenticates with a public key registered to the account (boxkite
ssh-keys add) or a takeover token as the password, and talks only to the
control plane. The bastion key (the same value as the server's), read from
--key-file, lets it serve registered keys; %s, which stays
readable in /proc for as long as the bastion runs, is refused.

Flags:
`, bastionKeyEnv)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, &usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, &usageError{fmt.Errorf("%s=%q: %w", envName(f.Name), v, err)})
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	switch {
	case o.server == "":
		return nil, &usageError{fmt.Errorf("--server (or %s) is required", envName("server"))}
	case o.maxPerSource < 1:
		return nil, &usageError{errors.New("--max-per-source must be at least 1")}
	case o.maxStartups < 1:
		return nil, &usageError{errors.New("--max-startups must be at least 1")}
	case o.loginTimeout <= 0:
		return nil, &usageError{errors.New("--login-timeout must be positive")}
	}
	u, err := url.Parse(o.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &usageError{fmt.Errorf("--server %q is not an http(s) URL", o.server)}
	}
	o.server = strings.TrimRight(o.server, "/")
	return o, nil
}

// readKeyFile reads the bastion key from path, refusing a file that others
// could read (internal/secretfile): the key opens every terminal whose
// account registered an SSH key.
func readKeyFile(path string) (string, error) {
	key, err := secretfile.Read(path)
	if errors.Is(err, secretfile.ErrExposed) {
		return "", &usageError{fmt.Errorf("--key-file: %w", err)}
	}
	if err != nil {
		return "", fmt.Errorf("read --key-file: %w", err)
	}
	if len(key) < minBastionKeyLen {
		return "", &usageError{fmt.Errorf("--key-file %s holds %d bytes; the bastion key is at least %d", path, len(key), minBastionKeyLen)}
	}
	return key, nil
}

// resolveKey is the bastion key, from the key file. A key in the
// environment is refused with a hint rather than used.
func resolveKey(o *options, getenv func(string) string) (string, error) {
	switch {
	case getenv(bastionKeyEnv) != "":
		return "", &usageError{fmt.Errorf("%s is set: the bastion no longer reads its key from the environment, which stays readable in /proc/<pid>/environ; "+
			"unset it, write the key to a file only you can read and pass --key-file FILE", bastionKeyEnv)}
	case o.keyFile == "":
		return "", &usageError{fmt.Errorf("the bastion key is required: pass --key-file, a 0600 file holding the server's bastion key (see docs/bastion.md)")}
	}
	return readKeyFile(o.keyFile)
}
