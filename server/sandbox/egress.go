package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// egressHosts checks a create's egress_hosts: admin keys only (member
// keys are what agents hold, and egress is the operator's to give), each
// a host name, optionally with a port.
func egressHosts(key *model.APIKey, hosts []string) (egress.Allowlist, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	if key == nil || key.Role != model.RoleAdmin {
		return nil, api.Errorf(http.StatusForbidden, api.CodeForbidden, "only admin keys may grant egress_hosts").
			WithHint("use an admin API key, or grant a catalog host with an MCP connection")
	}
	if len(hosts) > api.MaxEgressHosts {
		return nil, httpx.Invalid("egress_hosts", fmt.Sprintf("egress_hosts has more than %d hosts", api.MaxEgressHosts), "")
	}
	var allow egress.Allowlist
	for _, h := range hosts {
		g, err := egress.ParseGrant(h)
		if err == nil && net.ParseIP(strings.TrimPrefix(g.Host, "*.")) != nil {
			err = errors.New("an IP address; the proxy lets names only through")
		}
		if err != nil {
			return nil, httpx.Invalid("egress_hosts", fmt.Sprintf("egress host %q is not a host name (%v)", h, err), `give "host" (port 443) or "host:port"`)
		}
		allow = append(allow, g)
	}
	return allow, nil
}

// egressServer returns the Spec.Egress of a sandbox granted allow: it
// serves the driver's listener with the proxy and audits every decision.
func (s *Service) egressServer(sb *model.Sandbox, allow egress.Allowlist) func(net.Listener) {
	if len(allow) == 0 {
		return nil
	}
	p := &egress.Proxy{
		Resolver: s.cfg.EgressResolver, Permit: s.cfg.EgressPermitForTests, Log: s.log,
		Admit: s.auditOpen, // decisions are audited: none while the log cannot be written
	}
	return func(l net.Listener) {
		go p.Serve(l, allow, func(d egress.Decision) {
			op, detail := "egress_deny", map[string]any{"host": d.Host, "port": d.Port, "reason": d.Reason}
			if d.Allowed {
				op = "egress_allow"
			}
			if d.Addr.IsValid() {
				detail["address"] = d.Addr.String()
			}
			// A failure keeps the entry waiting in the audit gate, which
			// then refuses further connections (Admit).
			_ = s.audit(context.Background(), audit.Record{Sandbox: sb, Operation: op, Detail: detail, Started: s.now()})
		})
	}
}
