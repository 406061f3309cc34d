package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLoadavg(t *testing.T) {
	tests := []struct {
		in    string
		load  [3]float64
		tasks int
		ok    bool
	}{
		{"0.45 2.41 3.11 2/1234 5678\n", [3]float64{0.45, 2.41, 3.11}, 1234, true},
		{"0.45 2.41 3.11", [3]float64{}, 0, false},
		{"0.45 x 3.11 2/1234 5678", [3]float64{0.45}, 0, false},
		{"0.45 2.41 3.11 1234 5678", [3]float64{0.45, 2.41, 3.11}, 0, false},
	}
	for _, tt := range tests {
		load, tasks, ok := parseLoadavg(tt.in)
		if diff := cmp.Diff([]any{tt.load, tt.tasks, tt.ok}, []any{load, tasks, ok}); diff != "" {
			t.Errorf("parseLoadavg(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseCPUInfo(t *testing.T) {
	const vm = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu vme hypervisor lahf_lm\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n"
	if model, virt := parseCPUInfo(vm); model != "AMD EPYC" || virt != "vm" {
		t.Errorf("parseCPUInfo(vm) = %q, %q", model, virt)
	}
	if _, virt := parseCPUInfo("flags : fpu hypervisorx\n"); virt != "none" {
		t.Errorf("a flag that only contains hypervisor: %q", virt)
	}
	if got := meminfoField("MemTotal:       24576000 kB\n", "MemTotal:"); got != 24576000<<10 {
		t.Errorf("meminfoField = %d", got)
	}
}

func FuzzParseLoadavg(f *testing.F) {
	f.Add("0.45 2.41 3.11 2/1234 5678\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		load, tasks, ok := parseLoadavg(s)
		if ok && (tasks < 0 || load[0] < 0 || load[1] < 0 || load[2] < 0) {
			t.Errorf("parseLoadavg(%q) = %v, %d: negative", s, load, tasks)
		}
	})
}

func FuzzParseCPUInfo(f *testing.F) {
	f.Add("model name\t: AMD EPYC\nflags\t: hypervisor\n")
	f.Fuzz(func(t *testing.T, s string) {
		if _, virt := parseCPUInfo(s); virt != "vm" && virt != "none" {
			t.Errorf("virt %q", virt)
		}
		if meminfoField(s, "MemTotal:") < 0 {
			t.Error("negative memory")
		}
	})
}
