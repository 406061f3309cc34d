// Package pintls makes the TLS configuration that trusts exactly one
// certificate: the one a driver made for one sandbox's sidecar, so there
// is no chain or name to check. The control plane's sidecar clients and
// the kube driver's own requests use it.
package pintls

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
)

// Config trusts exactly the certificate in certPEM.
func Config(certPEM []byte) (*tls.Config, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("sidecar endpoint: the pinned certificate is not a PEM certificate")
	}
	want := sha256.Sum256(block.Bytes)
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // verified by the pin below instead of a chain
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || sha256.Sum256(raw[0]) != want {
				return errors.New("the sidecar's certificate is not the pinned one")
			}
			return nil
		},
	}, nil
}
