package cli

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// offeredFingerprints is the set of SHA256 fingerprints of the public keys
// ssh would offer when run with args: the identity files `ssh -G`
// resolves for them (each key's .pub beside it) and, unless
// IdentitiesOnly or IdentityAgent none say otherwise, the agent's keys.
// known is false when that cannot be told (ssh -G failed), and then the
// caller keeps ssh's own choice.
//
// It exists so that `boxkite ssh` with a key registered from another
// machine mints a token, as its help promises for "no key", instead of
// letting ssh fail on a key the bastion does not know.
func offeredFingerprints(ctx context.Context, sshBin string, args []string) (fps map[string]bool, known bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sshBin, append([]string{"-G"}, args...)...)
	cmd.Stdin = nil
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	cfg := parseSSHConfigDump(out, sshHome())
	fps = map[string]bool{}
	if !cfg.pubkey {
		return fps, true
	}
	for _, path := range cfg.identityFiles {
		if fp, ok := pubFileFingerprint(path + ".pub"); ok {
			fps[fp] = true
		}
	}
	if cfg.identitiesOnly {
		return fps, true
	}
	sock := cfg.agent
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	for _, fp := range agentFingerprints(sock) {
		fps[fp] = true
	}
	return fps, true
}

// sshConfigDump is what offeredFingerprints reads of `ssh -G`'s output.
type sshConfigDump struct {
	identityFiles  []string // with ~ expanded
	identitiesOnly bool
	pubkey         bool
	agent          string // the IdentityAgent socket; "" for $SSH_AUTH_SOCK
}

// parseSSHConfigDump reads `ssh -G` output: one "keyword value" per line,
// keywords in lower case. home expands a leading ~ as ssh does (the
// passwd entry's directory, not $HOME).
func parseSSHConfigDump(out []byte, home string) sshConfigDump {
	cfg := sshConfigDump{pubkey: true}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "identityfile":
			cfg.identityFiles = append(cfg.identityFiles, expandTilde(value, home))
		case "identitiesonly":
			cfg.identitiesOnly = value == "yes" || value == "true"
		case "pubkeyauthentication":
			cfg.pubkey = value != "no" && value != "false"
		case "identityagent":
			if value == "none" {
				cfg.identitiesOnly = true // no agent: only the files count
			} else if value != "SSH_AUTH_SOCK" {
				cfg.agent = expandTilde(value, home)
			}
		}
	}
	return cfg
}

func expandTilde(path, home string) string {
	if path == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return path
}

// sshHome is the directory ssh expands ~ to: the user's passwd entry,
// which ssh reads rather than $HOME.
func sshHome() string {
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	home, _ := os.UserHomeDir()
	return home
}

func pubFileFingerprint(path string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return "", false
	}
	return ssh.FingerprintSHA256(pub), true
}

// agentFingerprints lists the keys of the agent at sock; none when there
// is no agent or it does not answer.
func agentFingerprints(sock string) []string {
	if sock == "" {
		return nil
	}
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return nil
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	keys, err := agent.NewClient(conn).List()
	if err != nil {
		return nil
	}
	fps := make([]string, 0, len(keys))
	for _, k := range keys {
		fps = append(fps, ssh.FingerprintSHA256(k))
	}
	return fps
}
