package securitytest

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// TestPTYsPerSandbox: a sandbox that opens /dev/ptmx until it is refused
// holds its own allowance of pseudo-terminals (jail.MaxPTYs), not the
// host's: another sandbox meanwhile still opens as many, so its terminals
// (takeover, pty-exec, the bastion) keep working. Before, every jail's
// devpts had no maximum but the host-wide kernel.pty.max less the
// reserve of the host's own devpts (4096 - 1024 by default): one python3
// in one sandbox took all 3072, and every other sandbox's pty-exec
// answered 500 until it let go.
func TestPTYsPerSandbox(t *testing.T) {
	x := newSuite(t)
	a, b := x.sandbox(api.CreateSandboxRequest{Label: "attacker"}), x.sandbox(api.CreateSandboxRequest{Label: "bystander"})
	atk := attack{x, "ptys"}
	n, why := atk.hold(a)
	if why != "ENOSPC" || n != jail.MaxPTYs {
		t.Fatalf("the attacker held %d pseudo-terminals and stopped on %s; want its own allowance, %d, and ENOSPC", n, why, jail.MaxPTYs)
	}
	atk.exhausted(a, 0, "ENOSPC")
	// The attacker's own terminals are refused with the reason, not a 500.
	_, err := x.c.PTYExec(context.Background(), a, api.PTYExecRequest{Command: "true"})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusTooManyRequests || ae.Code != api.CodeLimitExceeded || ae.Hint == "" {
		t.Errorf("pty-exec in the attacking sandbox = %v; want 429 %s with a hint", err, api.CodeLimitExceeded)
	}
	if got, why := atk.once(b); got != n || why != "ENOSPC" {
		t.Errorf("the bystander could open %d pseudo-terminals during the attack (%s), want the same %d", got, why, n)
	}
}
