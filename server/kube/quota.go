package kube

import (
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/server/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QuotaResource prefixes the resource of a refusal for the sandbox
// namespace's ResourceQuota: "quota/pods", "quota/limits.memory", …
const QuotaResource = "quota/"

// quotaRefusal is err, from a create in the sandbox namespace, with a
// *model.HostLimitError in front when the API server refused it for a
// ResourceQuota ("exceeded quota: NAME, requested: r=q, used: r=q,
// limited: r=q"): the server answers 503 host_capacity, not a failure
// to retry.
func quotaRefusal(err error) error {
	if err == nil || !apierrors.IsForbidden(err) {
		return err
	}
	_, rest, ok := strings.Cut(err.Error(), "exceeded quota: ")
	if !ok {
		return err
	}
	name, rest, _ := strings.Cut(rest, ", ")
	he := &model.HostLimitError{
		Resource: QuotaResource + "unknown",
		Hint: fmt.Sprintf("the sandbox namespace's ResourceQuota %s is used up: remove sandboxes you no longer need, "+
			"or raise it (the chart's sandboxes.resourceQuota)", name),
	}
	used, limited := quotaList(rest, "used: "), quotaList(rest, "limited: ")
	if len(limited) > 0 {
		r := limited[0]
		he.Resource, he.Limit = QuotaResource+r.name, r.value
		for _, u := range used {
			if u.name == r.name {
				he.Used = u.value
			}
		}
	}
	return fmt.Errorf("%w: %w", he, err)
}

type quotaItem struct {
	name  string
	value int64
}

// quotaList parses the "r=q,r=q" after prefix in msg (up to the next
// ", "); unparsable items are left out.
func quotaList(msg, prefix string) []quotaItem {
	_, rest, ok := strings.Cut(msg, prefix)
	if !ok {
		return nil
	}
	rest, _, _ = strings.Cut(rest, ", ")
	var out []quotaItem
	for item := range strings.SplitSeq(rest, ",") {
		name, q, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue
		}
		v, err := resource.ParseQuantity(q)
		if err != nil {
			continue
		}
		out = append(out, quotaItem{name: name, value: v.Value()})
	}
	return out
}
