package sidecar

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// metrics counts requests per route pattern and exec outcomes, served as
// Prometheus text by GET /metrics. Routes are mux patterns, never raw paths,
// so ids do not make new series.
type metrics struct {
	start time.Time

	mu        sync.Mutex
	requests  map[string]uint64
	errors    map[string]uint64
	execs     uint64
	execFails uint64
}

func newMetrics(start time.Time) *metrics {
	return &metrics{start: start, requests: map[string]uint64{}, errors: map[string]uint64{}}
}

// request counts one request to route that was answered with status.
func (m *metrics) request(route string, status int) {
	if route == "" {
		route = "unmatched"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[route]++
	if status >= 400 {
		m.errors[route]++
	}
}

// exec counts one /exec command that ended with exitCode.
func (m *metrics) exec(exitCode int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.execs++
	if exitCode != 0 {
		m.execFails++
	}
}

// write renders the text exposition format, version 0.0.4.
func (m *metrics) write(now time.Time) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b bytes.Buffer
	head := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	head("boxkite_sidecar_uptime_seconds", "gauge", "Seconds since the sidecar started.")
	fmt.Fprintf(&b, "boxkite_sidecar_uptime_seconds %s\n", strconv.FormatFloat(now.Sub(m.start).Seconds(), 'f', 3, 64))
	for _, c := range []struct {
		name, help string
		counts     map[string]uint64
	}{
		{"boxkite_sidecar_requests_total", "Requests by route pattern.", m.requests},
		{"boxkite_sidecar_request_errors_total", "Requests answered with status 400 or above, by route pattern.", m.errors},
	} {
		head(c.name, "counter", c.help)
		for _, route := range slices.Sorted(maps.Keys(c.counts)) {
			fmt.Fprintf(&b, "%s{route=\"%s\"} %d\n", c.name, escapeLabel(route), c.counts[route])
		}
	}
	head("boxkite_sidecar_exec_total", "counter", "Commands run by /exec.")
	fmt.Fprintf(&b, "boxkite_sidecar_exec_total %d\n", m.execs)
	head("boxkite_sidecar_exec_errors_total", "counter", "Commands run by /exec that exited non-zero.")
	fmt.Fprintf(&b, "boxkite_sidecar_exec_errors_total %d\n", m.execFails)
	return b.Bytes()
}

// escapeLabel escapes a label value as the exposition format requires.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func (h *Handler) metricsText(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(h.sess.metrics.write(time.Now()))
	return err
}
