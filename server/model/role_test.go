package model

import "testing"

// TestEffectiveKeyRole: an organization's key acts with the lesser of its
// own role and its holder's role in the organization; a holder who is no
// longer a member leaves it none.
func TestEffectiveKeyRole(t *testing.T) {
	for _, c := range []struct{ key, org, want string }{
		{RoleAdmin, RoleOwner, RoleAdmin},
		{RoleAdmin, RoleAdmin, RoleAdmin},
		{RoleAdmin, RoleMember, RoleMember},
		{RoleMember, RoleOwner, RoleMember},
		{RoleMember, RoleAdmin, RoleMember},
		{RoleMember, RoleMember, RoleMember},
		{RoleAdmin, "", ""},
		{RoleMember, "", ""},
		{RoleAdmin, "operator", ""},
	} {
		if got := EffectiveKeyRole(c.key, c.org); got != c.want {
			t.Errorf("EffectiveKeyRole(%q, %q) = %q, want %q", c.key, c.org, got, c.want)
		}
	}
}
