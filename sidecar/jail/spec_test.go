package jail

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSpecValidate(t *testing.T) {
	ok := Spec{ID: "a", Workspace: "/w", RunDir: "/r"}
	tests := []struct {
		name    string
		edit    func(*Spec)
		wantErr bool
	}{
		{"minimal", func(*Spec) {}, false},
		{"root mapping", func(s *Spec) { s.HostIDBase = 1 << 30 }, false},
		{"highest base", func(s *Spec) { s.HostIDBase = MaxHostIDBase }, false},
		{"base past the last id", func(s *Spec) { s.HostIDBase = MaxHostIDBase + 1 }, true},
		{"outputs", func(s *Spec) { s.Outputs = "/o" }, false},
		{"no id", func(s *Spec) { s.ID = "" }, true},
		{"relative workspace", func(s *Spec) { s.Workspace = "w" }, true},
		{"no run dir", func(s *Spec) { s.RunDir = "" }, true},
		{"relative outputs", func(s *Spec) { s.Outputs = "o" }, true},
		{"base overlapping host ids", func(s *Spec) { s.HostIDBase = 1000 }, true},
		{"negative base", func(s *Spec) { s.HostIDBase = -1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.edit(&s)
			if err := s.validate(); (err != nil) != tt.wantErr {
				t.Errorf("validate(%+v) = %v, want error %v", s, err, tt.wantErr)
			}
		})
	}
}

func TestBuildSpecValidate(t *testing.T) {
	ok := Spec{ID: "b", Image: "/img/root", HostIDBase: 1 << 30, Build: &Build{Steps: [][]string{{"npm", "install"}}}}
	tests := []struct {
		name    string
		edit    func(*Spec)
		wantErr bool
	}{
		{"minimal", func(*Spec) {}, false},
		{"no steps", func(s *Spec) { s.Build.Steps = nil }, true},
		{"empty step", func(s *Spec) { s.Build.Steps = [][]string{{}} }, true},
		{"no root", func(s *Spec) { s.Image = "" }, true},
		{"relative root", func(s *Spec) { s.Image = "img" }, true},
		{"unprivileged", func(s *Spec) { s.HostIDBase = 0 }, true},
		{"workspace", func(s *Spec) { s.Workspace = "/w" }, true},
		{"run dir", func(s *Spec) { s.RunDir = "/r" }, true},
		{"binds", func(s *Spec) { s.Binds = []Bind{{Source: "/v", Target: "/workspace/v"}} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			b := *ok.Build
			s.Build = &b
			tt.edit(&s)
			if err := s.validate(); (err != nil) != tt.wantErr {
				t.Errorf("validate(%+v) = %v, want error %v", s, err, tt.wantErr)
			}
		})
	}
}

func TestLaunchRoundTrip(t *testing.T) {
	in := Launch{
		Spec:     Spec{ID: "a", Workspace: "/w", RunDir: "/r", HostIDBase: 1 << 30}.withDefaults(),
		Token:    "t0k",
		MountFDs: map[string]int{WorkspaceDir: 5},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Launch
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("Launch JSON round trip (-in +out):\n%s", diff)
	}
	if !in.Spec.withDefaults().Nested() == (in.Spec.HostIDBase == 0) {
		t.Errorf("Nested() = %v with HostIDBase %d", in.Spec.Nested(), in.Spec.HostIDBase)
	}
}
