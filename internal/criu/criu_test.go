package criu

import "testing"

func TestCause(t *testing.T) {
	for _, tt := range []struct{ out, want string }{
		{
			"Error (criu/util.c:642): exited, status=1\nError (criu/vdso.c:381): vdso: Unexpected rt vDSO area bounds\nError (criu/crtools.c:260): Could not initialize kernel features detection.\n",
			"Error (criu/vdso.c:381): vdso: Unexpected rt vDSO area bounds",
		},
		{"Looks good.\n", "Looks good."},
		{"", ""},
		{"warning\nsomething odd\n", "something odd"},
	} {
		if got := Cause(tt.out); got != tt.want {
			t.Errorf("Cause(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}

func FuzzCause(f *testing.F) {
	f.Add("Error (x): exited, status=1\nError (y): why\n")
	f.Fuzz(func(t *testing.T, out string) { _ = Cause(out) })
}
