package cli

import (
	"os"
	"strconv"
	"strings"
)

// benchHost is the machine bench ran on, so that one run can be compared
// from outside: its CPUs, memory, kernel, whether it is virtualised, its
// pid_max (what caps idle sandboxes, issue 27) and its load average when
// the run started and ended (the machine may be shared; ratios to the
// floors of the same run are what to compare).
type benchHost struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model,omitempty"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Kernel   string `json:"kernel"`
	// Virtualization is "none", "vm" (the CPU reports a hypervisor) with
	// the platform's DMI vendor and product when readable, or "" when
	// unknown (not Linux).
	Virtualization string      `json:"virtualization"`
	MemoryBytes    int64       `json:"memory_bytes,omitempty"`
	PidMax         int         `json:"pid_max,omitempty"`
	LoadStart      *[3]float64 `json:"load_average_start,omitempty"`
	LoadEnd        *[3]float64 `json:"load_average_end,omitempty"`
}

// readHost fills what /proc and /sys tell of the machine.
func (h *benchHost) readHost() {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUModel, h.Virtualization = parseCPUInfo(string(b))
		if h.Virtualization == "vm" {
			if p := dmi("sys_vendor") + " " + dmi("product_name"); strings.TrimSpace(p) != "" {
				h.Virtualization += " (" + strings.TrimSpace(p) + ")"
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		h.MemoryBytes = meminfoField(string(b), "MemTotal:")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		h.PidMax, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
}

func dmi(name string) string {
	b, err := os.ReadFile("/sys/class/dmi/id/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// parseCPUInfo returns /proc/cpuinfo's first model name and "vm" when any
// CPU has the hypervisor flag, else "none".
func parseCPUInfo(s string) (model, virt string) {
	virt = "none"
	for line := range strings.Lines(s) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "model name":
			if model == "" {
				model = val
			}
		case "flags":
			if strings.Contains(" "+val+" ", " hypervisor ") {
				virt = "vm"
			}
		}
	}
	return model, virt
}

// meminfoField is a /proc/meminfo field (kB) in bytes, 0 when absent.
func meminfoField(s, field string) int64 {
	for line := range strings.Lines(s) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if kib, err := strconv.ParseInt(f[0], 10, 64); err == nil && kib >= 0 {
					return kib << 10
				}
			}
		}
	}
	return 0
}

// loadavg reads the load averages and the number of tasks (threads) on
// the host from /proc/loadavg; ok false off Linux.
func loadavg() (load [3]float64, tasks int, ok bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return load, 0, false
	}
	return parseLoadavg(string(b))
}

// parseLoadavg parses "0.45 2.41 3.11 2/1234 5678".
func parseLoadavg(s string) (load [3]float64, tasks int, ok bool) {
	f := strings.Fields(s)
	if len(f) < 4 {
		return load, 0, false
	}
	for i := range load {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 {
			return load, 0, false
		}
		load[i] = v
	}
	_, total, found := strings.Cut(f[3], "/")
	n, err := strconv.Atoi(total)
	if !found || err != nil || n < 0 {
		return load, 0, false
	}
	return load, n, true
}

// loadNow is the host's load average, nil when unknown.
func loadNow() *[3]float64 {
	l, _, ok := loadavg()
	if !ok {
		return nil
	}
	return &l
}
