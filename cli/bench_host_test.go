package cli

import (
	"encoding/json"
	"strings"
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

// TestHostMemoryPerSandbox: a MemAvailable that rose while the idle
// sandboxes ran (other processes freed memory) is no measure: null in
// --json and said so in the text, never a negative cost per sandbox.
func TestHostMemoryPerSandbox(t *testing.T) {
	for _, tt := range []struct {
		name          string
		before, after int64
		wantJSON      string
		wantText      string
	}{
		{"fell", 10 << 20, 4 << 20, `"host_memory_per_sandbox_bytes":2097152`, "; host MemAvailable fell 2.0 MiB per sandbox"},
		{"unchanged", 10 << 20, 10 << 20, `"host_memory_per_sandbox_bytes":0`, "; host MemAvailable fell 0.0 MiB per sandbox"},
		{"rose", 4 << 20, 10 << 20, `"host_memory_per_sandbox_bytes":null,"host_memory_unmeasured":"host MemAvailable rose 6.0 MiB`, "; host memory per sandbox: host MemAvailable rose 6.0 MiB while they ran (other processes freed memory)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			i := &idleBench{Requested: 3, Created: 3, Answered: 3}
			i.HostMemoryPerSandboxBytes, i.HostMemoryUnmeasured = hostMemoryPerSandbox(tt.before, tt.after, 3)
			b, err := json.Marshal(i)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.wantJSON) {
				t.Errorf("JSON %s\nwant it to hold %s", b, tt.wantJSON)
			}
			var text strings.Builder
			printBenchMemory(&text, &benchReport{Idle: i})
			if !strings.Contains(text.String(), tt.wantText) || strings.Contains(text.String(), "-") {
				t.Errorf("text %q\nwant it to hold %q, with no negative number", text.String(), tt.wantText)
			}
		})
	}
}
