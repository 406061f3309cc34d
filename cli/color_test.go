package cli

import "testing"

// TestColorAllowed: NO_COLOR, CLICOLOR=0 and TERM=dumb turn colour off on
// a terminal, CLICOLOR_FORCE turns it on when piped, and NO_COLOR beats it.
func TestColorAllowed(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		tty  bool
		want bool
	}{
		{nil, true, true},
		{nil, false, false},
		{map[string]string{"NO_COLOR": "1"}, true, false},
		{map[string]string{"NO_COLOR": ""}, true, true},
		{map[string]string{"CLICOLOR": "0"}, true, false},
		{map[string]string{"CLICOLOR": "1"}, true, true},
		{map[string]string{"CLICOLOR": "1"}, false, false},
		{map[string]string{"TERM": "dumb"}, true, false},
		{map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{map[string]string{"CLICOLOR_FORCE": "1", "CLICOLOR": "0"}, false, true},
		{map[string]string{"CLICOLOR_FORCE": "1", "TERM": "dumb"}, false, true},
		{map[string]string{"CLICOLOR_FORCE": "0"}, false, false},
		{map[string]string{"CLICOLOR_FORCE": "0"}, true, true},
		{map[string]string{"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, true, false},
	} {
		if got := colorAllowed(tt.tty, func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("colorAllowed(tty %v, %v) = %v, want %v", tt.tty, tt.env, got, tt.want)
		}
	}
}

// TestStdioColorForced: CLICOLOR_FORCE colours the output of a test,
// whose stdout is not a terminal; CLICOLOR=0 alone leaves it plain.
func TestStdioColorForced(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("CLICOLOR", "")
	t.Setenv("CLICOLOR_FORCE", "1")
	if !Stdio().Color {
		t.Errorf("CLICOLOR_FORCE=1: Stdio().Color = false, want true")
	}
	t.Setenv("CLICOLOR_FORCE", "")
	t.Setenv("CLICOLOR", "0")
	if Stdio().Color {
		t.Errorf("CLICOLOR=0: Stdio().Color = true, want false")
	}
}
