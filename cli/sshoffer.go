package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"
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
	for _, fp := range agentFingerprints(ctx, sock) {
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
	return authorizedKeyFingerprint(data)
}

// authorizedKeyFingerprint is the SHA256 fingerprint, as ssh-keygen -l
// writes it, of the first key in data (authorized_keys form: options,
// the key type, the base64 key, a comment). The CLI links no SSH library
// (ssh belongs to the bastion, deps_test.go): a key is found as the
// base64 field whose wire form starts with the type named before it.
func authorizedKeyFingerprint(data []byte) (string, bool) {
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		for i := 1; i < len(f); i++ {
			blob, err := base64.StdEncoding.DecodeString(f[i])
			if err == nil && bytes.HasPrefix(blob, sshString(f[i-1])) {
				return fingerprintSHA256(blob), true
			}
		}
	}
	return "", false
}

// sshString is s in the SSH wire form: its length, then its bytes.
func sshString(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

// fingerprintSHA256 is ssh.FingerprintSHA256 of a key's wire form.
func fingerprintSHA256(blob []byte) string {
	sum := sha256.Sum256(blob)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// agentFingerprints lists the keys of the agent at sock, as OpenSSH's
// own ssh-add -L prints them; none when there is no agent, it does not
// answer, or ssh-add is missing.
func agentFingerprints(ctx context.Context, sock string) []string {
	if sock == "" {
		return nil
	}
	bin, err := exec.LookPath("ssh-add")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-L")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	out, err := cmd.Output()
	if err != nil {
		return nil // exit 1: the agent has no keys; 2: no agent
	}
	var fps []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if fp, ok := authorizedKeyFingerprint([]byte(line)); ok {
			fps = append(fps, fp)
		}
	}
	return fps
}
