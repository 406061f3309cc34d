package takeover

import "testing"

func TestTypedInputCap(t *testing.T) {
	t.Parallel()
	var in typedInput
	in.add(make([]byte, maxTypedLog-1))
	if b, cut := in.take(); len(b) != maxTypedLog-1 || cut {
		t.Fatalf("take = %d bytes, cut %v", len(b), cut)
	}
	in.add([]byte("ab"))
	if b, cut := in.take(); string(b) != "a" || !cut {
		t.Errorf("take at the cap = %q, cut %v; want a, cut", b, cut)
	}
	in.add([]byte("c"))
	if b, cut := in.take(); len(b) != 0 || cut {
		t.Errorf("take past the cap = %q, cut %v; want nothing, said once", b, cut)
	}
}
