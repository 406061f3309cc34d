package seccomppolicy

import (
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
)

// TestSeccompPolicyAssembles catches a syscall name the library does not
// know or an argument filter it cannot build; the adversarial suite
// (internal/securitytest) proves the filter's effect inside real jails.
func TestSeccompPolicyAssembles(t *testing.T) {
	for _, nested := range []bool{false, true} {
		p, err := Policy(nested)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := p.Assemble()
		if err != nil {
			t.Fatalf("nested=%v: Assemble: %v", nested, err)
		}
		// The classic BPF limit; the kernel refuses longer programs.
		if len(prog) > 4096 {
			t.Errorf("nested=%v: %d instructions", nested, len(prog))
		}
		if p.DefaultAction != seccomp.ActionAllow {
			t.Errorf("default action %v, want allow (a deny-list)", p.DefaultAction)
		}
	}
}
