package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

func TestParseSSHConfigDump(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want sshConfigDump
	}{
		{
			name: "defaults",
			out:  "user abc\nidentityfile ~/.ssh/id_rsa\nidentityfile ~/.ssh/id_ed25519\nidentitiesonly no\npubkeyauthentication true\n",
			want: sshConfigDump{identityFiles: []string{"/home/u/.ssh/id_rsa", "/home/u/.ssh/id_ed25519"}, pubkey: true},
		},
		{
			name: "identities only, absolute file",
			out:  "identityfile /keys/work\nidentitiesonly yes\n",
			want: sshConfigDump{identityFiles: []string{"/keys/work"}, identitiesOnly: true, pubkey: true},
		},
		{
			name: "no public keys",
			out:  "pubkeyauthentication no\nidentityfile ~/.ssh/id_rsa\n",
			want: sshConfigDump{identityFiles: []string{"/home/u/.ssh/id_rsa"}},
		},
		{
			name: "agent off",
			out:  "identityagent none\n",
			want: sshConfigDump{identitiesOnly: true, pubkey: true},
		},
		{
			name: "another agent",
			out:  "identityagent ~/.1password/agent.sock\n",
			want: sshConfigDump{agent: "/home/u/.1password/agent.sock", pubkey: true},
		},
		{
			name: "the default agent",
			out:  "identityagent SSH_AUTH_SOCK\n",
			want: sshConfigDump{pubkey: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseSSHConfigDump([]byte(tt.out), "/home/u")
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(sshConfigDump{})); diff != "" {
				t.Errorf("parseSSHConfigDump (-want +got):\n%s", diff)
			}
		})
	}
}

// newKey makes an ed25519 key; with path, it is written there as ssh
// keeps it (private file, .pub beside it: ssh -G drops an -i file that does
// not exist). It returns the key and its fingerprint.
func newKey(t *testing.T, path string) (ed25519.PrivateKey, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if path != "" {
		block, err := ssh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return priv, ssh.FingerprintSHA256(signer.PublicKey())
}

// TestOfferedFingerprints runs the real ssh -G: an -i file counts, with
// IdentitiesOnly the agent's keys do not, without it they do.
func TestOfferedFingerprints(t *testing.T) {
	bin, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatalf("the OpenSSH client is needed (apt-get install openssh-client): %v", err)
	}
	dir := t.TempDir()
	_, fileFP := newKey(t, filepath.Join(dir, "file"))
	agentKey, agentFP := newKey(t, "")
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: agentKey}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer conn.Close(); _ = agent.ServeAgent(keyring, conn) }()
		}
	}()

	base := []string{"-F", "/dev/null", "-o", "IdentityAgent=" + sock, "-i", filepath.Join(dir, "file"), "-p", "2222"}
	for _, tt := range []struct {
		name      string
		extra     []string
		wantAgent bool
	}{
		{name: "file and agent", wantAgent: true},
		{name: "identities only", extra: []string{"-o", "IdentitiesOnly=yes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append(append([]string{}, base...), tt.extra...), "id@127.0.0.1", "true")
			got, known := offeredFingerprints(context.Background(), bin, args)
			if !known {
				t.Fatal("ssh -G could not be read")
			}
			if !got[fileFP] {
				t.Errorf("the -i file's key %s is not offered: %v", fileFP, got)
			}
			if got[agentFP] != tt.wantAgent {
				t.Errorf("the agent's key offered = %v, want %v", got[agentFP], tt.wantAgent)
			}
		})
	}
}

// FuzzAuthorizedKeyFingerprint checks the CLI's own reading of an
// authorized_keys line against x/crypto/ssh's (the bastion's library,
// which the CLI does not link): where ssh parses a key, the fingerprints
// agree; on anything it never panics.
func FuzzAuthorizedKeyFingerprint(f *testing.F) {
	_, fp := newKeyForFuzz(f)
	f.Add([]byte(fp))
	f.Add([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl comment"))
	f.Add([]byte(`command="x" ssh-rsa AAAA with options`))
	f.Add([]byte("# a comment\n\nssh-ed25519 !!!"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := authorizedKeyFingerprint(data)
		pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
		if err != nil {
			return
		}
		if want := ssh.FingerprintSHA256(pub); !ok || got != want {
			t.Errorf("authorizedKeyFingerprint(%q) = %q, %v; x/crypto/ssh reads %q", data, got, ok, want)
		}
	})
}

// newKeyForFuzz is an authorized_keys line of a fresh key, as a seed.
func newKeyForFuzz(f *testing.F) (ed25519.PrivateKey, string) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		f.Fatal(err)
	}
	return priv, string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
}
