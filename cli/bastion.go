package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// bastionBinary is the SSH front door `boxkite up` starts next to the server.
const bastionBinary = "boxkite-bastion"

// Ports of the local bastion: 2222 (the bastion's own default) unless taken.
const defaultLocalBastionPort = 2222

// bastionReadyTimeout bounds how long up waits for the bastion's SSH banner.
const bastionReadyTimeout = 10 * time.Second

// bastionHostKeyAlias is the name known_hosts and `boxkite ssh-config` give
// the local bastion's host key, whatever port it is on.
const bastionHostKeyAlias = "boxkite-bastion"

// bastionKeyBytes is the size of a generated bastion key before encoding.
const bastionKeyBytes = 48

// ensureBastionKey makes sure path holds a bastion key readable by its owner
// only: a new random one the first time, and a mode put right afterwards
// (the bastion refuses a key file others can read).
func ensureBastionKey(path string) error { return ensureKeyFile(path, "bastion key", bastionKeyBytes) }

// ensureKeyFile makes sure path holds a key of its own user only, writing
// n fresh random bytes (URL-safe base64) there when it does not exist.
func ensureKeyFile(path, what string, n int) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.Mode().IsRegular():
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return fmt.Errorf("restrict %s to its owner: %w", path, err)
			}
		}
		return nil
	case err == nil:
		return &hintError{err: fmt.Errorf("%s is not a regular file", path), hint: "remove it; boxkite up writes a new key there"}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("check %s: %w", what, err)
	}
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("generate %s: %w", what, err)
	}
	return writeFileAtomic(path, []byte(base64.RawURLEncoding.EncodeToString(b)+"\n"), 0o600)
}

// bastionWish is where up would like the local bastion: the address the
// previous run recorded and the port asked for with --bastion-port (0: none).
type bastionWish struct {
	recorded  string
	requested int
}

// chooseBastionPort is the requested port, which must be free; else the
// port of the previous run when it is free (so known_hosts and ssh configs
// keep working), else 2222, else any free one. Ports in lost were free when
// looked at but another process bound them first: they are not offered again.
func chooseBastionPort(wish bastionWish, lost []int) (int, error) {
	if wish.requested != 0 {
		if !portFree(wish.requested) {
			return 0, &hintError{
				err:  fmt.Errorf("port %d on 127.0.0.1 is already in use", wish.requested),
				hint: "pick another with --bastion-port, or leave it out and boxkite picks a free one",
			}
		}
		return wish.requested, nil
	}
	var candidates []int
	if _, p, err := net.SplitHostPort(wish.recorded); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			candidates = append(candidates, n)
		}
	}
	candidates = append(candidates, defaultLocalBastionPort)
	for _, p := range candidates {
		if !slices.Contains(lost, p) && portFree(p) {
			return p, nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for the bastion: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// bastionArgs is the bastion's command line: loopback only, the host key
// and the shared key as files in BOXKITE_HOME.
func bastionArgs(p localPaths, port int, serverURL string) []string {
	return []string{
		"--listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		"--server", serverURL,
		"--host-key", p.bastionHostKey,
		"--key-file", p.bastionKey,
	}
}

// bastionEnv is ours without the bastion's own variables: a
// BOXKITE_BASTION_KEY or _LISTEN meant for another bastion must not
// override what up passes. No secret variable (secretEnv) goes either:
// /proc would show it for as long as the bastion runs.
func bastionEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(kv, "BOXKITE_BASTION_") && !slices.Contains(secretEnv, name) {
			env = append(env, kv)
		}
	}
	return env
}

// bastionPortTries bounds how often up picks another port for the bastion
// after losing the one it chose: two ups at once (two BOXKITE_HOMEs, or
// tests in parallel) both find 2222 free, and only one bastion binds it.
const bastionPortTries = 3

// errBastionExited is the bastion ending before it answered.
var errBastionExited = errors.New("boxkite-bastion exited before it was ready")

// startLocalBastion starts boxkite-bastion for the local server, waits
// until it answers, writes its known_hosts lines and returns its address.
func startLocalBastion(ctx context.Context, p localPaths, serverURL string, wish bastionWish) (string, error) {
	bin, err := findCompanion(bastionBinary)
	if err != nil {
		return "", err
	}
	if err := ensureBastionKey(p.bastionKey); err != nil {
		return "", err
	}
	return onBastionPort(wish, func(port int) (string, error) {
		return launchBastion(ctx, bin, p, port, serverURL)
	})
}

// onBastionPort runs launch on the port chooseBastionPort picks. When the
// bastion exits before it is ready and its port is now taken, another
// process bound the port between the look and the bind: unless the port
// was asked for, launch runs again on another one.
func onBastionPort(wish bastionWish, launch func(port int) (string, error)) (string, error) {
	var lost []int
	for {
		port, err := chooseBastionPort(wish, lost)
		if err != nil {
			return "", err
		}
		addr, err := launch(port)
		if err == nil || wish.requested != 0 || !errors.Is(err, errBastionExited) ||
			portFree(port) || len(lost)+1 >= bastionPortTries {
			return addr, err
		}
		lost = append(lost, port)
	}
}

// launchBastion starts the bastion on port and waits until it answers.
func launchBastion(ctx context.Context, bin string, p localPaths, port int, serverURL string) (string, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logStart := fileSize(p.bastionLog)
	cmd, exited, err := startDetached(bin, bastionArgs(p, port, serverURL), bastionEnv(), p.bastionLog)
	if err != nil {
		return "", err
	}
	pid := cmd.Process.Pid
	if err := writePID(p.bastionPID, pid); err != nil {
		stopProcess(context.WithoutCancel(ctx), pid, time.Second, nil)
		return "", err
	}
	if err := waitBastion(ctx, addr, p.bastionHostKey+".pub", exited, bastionReadyTimeout); err != nil {
		stopProcess(context.WithoutCancel(ctx), pid, 2*time.Second, nil)
		os.Remove(p.bastionPID)
		return "", &hintError{err: err, hint: logHint(p.bastionLog, logStart)}
	}
	if err := writeKnownHosts(p, addr); err != nil {
		return "", err
	}
	return addr, nil
}

// waitBastion polls addr until it sends the SSH banner of the bastion
// whose host key's public half is in hostKeyPub, the process exits or
// timeout passes.
func waitBastion(ctx context.Context, addr, hostKeyPub string, exited <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := probeBastion(addr, hostKeyPub, time.Second); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("%w: %v", errBastionExited, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("boxkite-bastion did not answer on %s within %s", addr, timeout)
		}
	}
}

// probeBastion connects to addr and reads the SSH banner, which must be
// that of the boxkite-bastion with the host key in hostKeyPub: a bastion
// of another BOXKITE_HOME (another up that bound the port first) has
// another key, so it is not taken for this one. It sends nothing, so the
// bastion only logs a handshake that never started.
func probeBastion(addr, hostKeyPub string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read the SSH banner of %s: %w", addr, err)
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "SSH-2.0-boxkite-bastion") {
		return fmt.Errorf("%s is not boxkite-bastion (it says %q)", addr, line)
	}
	want, err := bastionBanner(hostKeyPub)
	if err != nil {
		return err
	}
	if line != want {
		return fmt.Errorf("%s is another boxkite-bastion (it says %q, this one's host key makes %q)", addr, line, want)
	}
	return nil
}

// bastionBanner is the SSH banner of the bastion whose host public key
// (authorized_keys form) is in the file pub: its name, then its key's
// SHA256 fingerprint as ssh-keygen -l writes it.
func bastionBanner(pub string) (string, error) {
	b, err := os.ReadFile(pub)
	if err != nil {
		return "", fmt.Errorf("read the bastion's host key: %w", err)
	}
	fp, ok := authorizedKeyFingerprint(b)
	if !ok {
		return "", fmt.Errorf("read the bastion's host key: %s is not a public key", pub)
	}
	return "SSH-2.0-boxkite-bastion " + fp, nil
}

// writeKnownHosts writes BOXKITE_HOME/known_hosts for the local bastion:
// its host key under its address and under bastionHostKeyAlias, which
// `boxkite ssh-config`'s stanza uses.
func writeKnownHosts(p localPaths, addr string) error {
	pub, err := os.ReadFile(p.bastionHostKey + ".pub")
	if err != nil {
		return fmt.Errorf("read the bastion's host key: %w", err)
	}
	key := strings.TrimSpace(string(pub))
	host, port, _ := net.SplitHostPort(addr)
	lines := fmt.Sprintf("[%s]:%s %s\n%s %s\n", host, port, key, bastionHostKeyAlias, key)
	return writeFileAtomic(p.knownHosts, []byte(lines), 0o600)
}

// runningBastion returns the pid of the local bastion when one is running.
func runningBastion(p localPaths) (int, error) {
	pid, err := readPID(p.bastionPID)
	if err != nil || pid == 0 {
		return 0, err
	}
	if !isProcessNamed(pid, bastionBinary) {
		return 0, nil
	}
	return pid, nil
}

// stopLocalBastion stops the local bastion, if one runs; its open sessions
// are told why they end. It reports the pid it stopped, 0 for none.
func stopLocalBastion(ctx context.Context, p localPaths) (int, error) {
	pid, err := runningBastion(p)
	if err != nil {
		return 0, err
	}
	if pid != 0 {
		if err := stopProcess(ctx, pid, stopTimeout, nil); err != nil {
			return 0, err
		}
	}
	if err := os.Remove(p.bastionPID); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("remove bastion pid file: %w", err)
	}
	return pid, nil
}

// ensureLocalBastion starts the local bastion unless it already answers
// at the address local.toml records (and on the port asked for, if one
// was), and records the address.
func ensureLocalBastion(ctx context.Context, p localPaths, serverURL string, wish bastionWish) (string, error) {
	recorded := wish.recorded
	if _, port, err := net.SplitHostPort(recorded); err == nil && wish.requested != 0 && port != strconv.Itoa(wish.requested) {
		recorded = "" // asked to move: start over on the new port
	}
	if pid, err := runningBastion(p); err != nil {
		return "", err
	} else if pid != 0 && recorded != "" && probeBastion(recorded, p.bastionHostKey+".pub", time.Second) == nil {
		return recorded, nil
	} else if pid != 0 {
		// Running but not where local.toml says: start over.
		if _, err := stopLocalBastion(ctx, p); err != nil {
			return "", err
		}
	}
	addr, err := startLocalBastion(ctx, p, serverURL, wish)
	if err != nil {
		return "", err
	}
	if err := updateFileConfig(p.config, func(fc *fileConfig) { fc.Bastion = addr }); err != nil {
		return "", err
	}
	return addr, nil
}

// bastionPathsFor fills in the bastion's files under home.
func bastionPathsFor(home string) (key, pid, log, hostKey, knownHosts string) {
	return filepath.Join(home, "bastion.key"), filepath.Join(home, "bastion.pid"), filepath.Join(home, "bastion.log"),
		filepath.Join(home, "bastion_host_key"), filepath.Join(home, "known_hosts")
}
