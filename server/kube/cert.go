package kube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/internal/pintls"
)

// certValidity is how long a sidecar certificate is valid: longer than any
// sandbox or warm pod lives.
const certValidity = 8 * 24 * time.Hour

type certPair struct {
	certPEM, keyPEM []byte
}

// newCert makes a fresh self-signed ECDSA P-256 certificate for one pod.
// The server pins exactly this certificate, so names and chains do not
// matter; the pod name is its subject for the logs.
func newCert(pod string, now time.Time) (*certPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate sidecar key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: pod},
		DNSNames:     []string{pod},
		NotBefore:    now.Add(-5 * time.Minute), // clock skew between nodes
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create sidecar certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal sidecar key: %w", err)
	}
	return &certPair{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// newToken returns a sidecar token: 32 random bytes in hex.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// pinnedClient returns an HTTP client that talks TLS to addr whatever the
// URL says and accepts only the certificate certPEM: the driver's own
// requests (health, claim) go through it.
func pinnedClient(certPEM []byte) (*http.Client, error) {
	cfg, err := pintls.Config(certPEM)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: cfg, Proxy: nil, DisableKeepAlives: true},
	}, nil
}
