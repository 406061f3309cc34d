package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// hostKey loads the host key from path, creating an ed25519 key there
// (0600) on first start, so clients' known_hosts stay valid across
// restarts, and keeps its public half next to it in path.pub, from which
// `boxkite up` writes a known_hosts line. path "" means a key for this
// process only.
func hostKey(path string) (ssh.Signer, error) {
	signer, err := loadHostKey(path)
	if err != nil || path == "" {
		return signer, err
	}
	if err := writePublicKey(path+".pub", signer.PublicKey()); err != nil {
		return nil, err
	}
	return signer, nil
}

// writePublicKey writes pub in authorized_keys form, unless the file
// already says exactly that.
func writePublicKey(path string, pub ssh.PublicKey) error {
	line := gossh.MarshalAuthorizedKey(pub)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(line) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, line, 0o644); err != nil {
		return fmt.Errorf("write host public key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write host public key: %w", err)
	}
	return nil
}

func loadHostKey(path string) (ssh.Signer, error) {
	if path == "" {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate host key: %w", err)
		}
		return gossh.NewSignerFromKey(priv)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createHostKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read host key: %w", err)
	}
	signer, err := gossh.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("parse host key %s: %w", path, err)
	}
	return signer, nil
}

func createHostKey(path string) (ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate host key: %w", err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "boxkite-bastion")
	if err != nil {
		return nil, fmt.Errorf("encode host key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create host key directory: %w", err)
	}
	// O_EXCL: two bastions starting at once must not overwrite each other's key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadHostKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("create host key: %w", err)
	}
	if err := pem.Encode(f, block); err != nil {
		f.Close()
		return nil, fmt.Errorf("write host key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write host key: %w", err)
	}
	return gossh.NewSignerFromKey(priv)
}
