package orgs

import (
	"errors"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestNeedRoleHint: the refusal's hint names who may do it: an owner when
// the owner role is needed (an admin cannot), else an owner or admin.
func TestNeedRoleHint(t *testing.T) {
	t.Parallel()
	tests := []struct{ need, have, who string }{
		{model.RoleOwner, model.RoleAdmin, "ask an owner of the organization"},
		{model.RoleAdmin, model.RoleMember, "ask an owner or admin of the organization"},
	}
	for _, tt := range tests {
		e, ok := errors.AsType[*api.Error](needRole(tt.need, tt.have))
		if !ok || e.Status != 403 || e.Code != api.CodeForbidden || !strings.HasPrefix(e.Hint, tt.who+" (") {
			t.Errorf("needRole(%s, %s) = %+v; want 403 forbidden and hint %q", tt.need, tt.have, e, tt.who)
		}
	}
}
