package webhooks

import (
	"errors"
	"fmt"
	"strings"
)

// sealedPrefix marks a stored secret or HEC token that the Sealer
// encrypted; a value without it is stored as it is (no Sealer, or a row
// from before the server had one).
const sealedPrefix = "sealed:"

// sealAD binds a sealed value to its subscription and field, so that a
// value copied to another row does not open.
func sealAD(accountID, webhookID, field string) []byte {
	return []byte("webhook\x00" + accountID + "\x00" + webhookID + "\x00" + field)
}

// sealed is sub as it is stored: its secret and HEC token encrypted when
// the service has a Sealer.
func (s *Service) sealed(sub *Subscription) (*Subscription, error) {
	if s.d.Sealer == nil {
		return sub, nil
	}
	out := *sub
	for _, f := range []struct {
		name string
		v    *string
	}{{"secret", &out.Secret}, {"hec_token", &out.HECToken}} {
		if *f.v == "" {
			continue
		}
		v, err := s.d.Sealer.Seal([]byte(*f.v), sealAD(sub.AccountID, sub.ID, f.name))
		if err != nil {
			return nil, fmt.Errorf("seal webhook %s: %w", f.name, err)
		}
		*f.v = sealedPrefix + v
	}
	return &out, nil
}

// errNoSealer is a sealed value on a server without the key to open it.
var errNoSealer = errors.New("the subscription's secret is encrypted and this server has no secrets key to open it (start it with the same --secrets-key-file)")

// opened is c with its secret and HEC token as they are sent.
func (s *Service) opened(c *Claim) (*Claim, error) {
	out := *c
	for _, f := range []struct {
		name string
		v    *string
	}{{"secret", &out.Secret}, {"hec_token", &out.HECToken}} {
		sealed, ok := strings.CutPrefix(*f.v, sealedPrefix)
		if !ok {
			continue
		}
		if s.d.Sealer == nil {
			return nil, errNoSealer
		}
		v, err := s.d.Sealer.Open(sealed, sealAD(c.AccountID, c.WebhookID, f.name))
		if err != nil {
			return nil, fmt.Errorf("open webhook %s: %w", f.name, err)
		}
		*f.v = string(v)
	}
	return &out, nil
}
