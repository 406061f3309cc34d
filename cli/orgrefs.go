package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// memberRef is the account id that ACCOUNT names in org set-role and org
// remove: an account id as given, or a member's email (any case), looked
// up among the organization's members, since people know each other by
// email rather than by account id.
func memberRef(ctx context.Context, c *client.Client, o *api.Organization, ref string) (string, error) {
	if !strings.Contains(ref, "@") {
		return ref, nil
	}
	ms, err := c.OrganizationMembers(ctx, o.ID)
	if err != nil {
		return "", fmt.Errorf("list members: %w", err)
	}
	for _, m := range ms {
		if strings.EqualFold(m.Email, ref) {
			return m.AccountID, nil
		}
	}
	return "", &notFoundError{
		err:  fmt.Errorf("%s is no member of %s", ref, o.Name),
		hint: fmt.Sprintf("'boxkite org members %s' lists the members; invite them with 'boxkite org invite %s %s'", orgRef(o), orgRef(o), ref),
	}
}

// switchRef is how the note after org create and org accept names o in
// 'boxkite org switch': orgRef, unless another of the caller's
// organizations has the same name (names are not unique), which would make
// the name ambiguous; then, or when the list cannot be had, the id.
func switchRef(ctx context.Context, c *client.Client, o *api.Organization) string {
	ref := orgRef(o)
	if ref == o.ID {
		return ref
	}
	orgs, err := c.ListOrganizations(ctx)
	if err != nil {
		return o.ID
	}
	n := 0
	for _, x := range orgs {
		if x.Name == o.Name {
			n++
		}
	}
	if n > 1 {
		return o.ID
	}
	return ref
}
