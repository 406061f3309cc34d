package sqlstore

import (
	"testing"

	"github.com/boxkite/boxkite/server/model"
)

// TestParseRevocation: a notice on revokeChannel is a credential's id, or
// a demotion's "demoted:<id>:<count>"; one that does not parse as a
// demotion is the id it carries, which names no credential.
func TestParseRevocation(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    model.Revocation
	}{
		{"0b5e-key", model.Revocation{CredentialID: "0b5e-key"}},
		{"demoted:0b5e-key:3", model.Revocation{CredentialID: "0b5e-key", Demotions: 3}},
		{"demoted:0b5e-key:0", model.Revocation{CredentialID: "demoted:0b5e-key:0"}},
		{"demoted:0b5e-key:x", model.Revocation{CredentialID: "demoted:0b5e-key:x"}},
		{"demoted::3", model.Revocation{CredentialID: "demoted::3"}},
	} {
		if got := parseRevocation(c.payload); got != c.want {
			t.Errorf("parseRevocation(%q) = %+v, want %+v", c.payload, got, c.want)
		}
	}
}
