package server

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// GET /metrics: the control plane's counters in the Prometheus text
// format (version 0.0.4), written by hand; the few metric kinds we need
// do not justify a client library.

// durationBuckets are the upper bounds, in seconds, of the request and
// exec duration histograms: from a cached key lookup to a long exec.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// histogram is a Prometheus histogram over durationBuckets.
type histogram struct {
	counts []uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
}

func (h *histogram) observe(seconds float64) {
	if h.counts == nil {
		h.counts = make([]uint64, len(durationBuckets))
	}
	if i, _ := slices.BinarySearch(durationBuckets, seconds); i < len(durationBuckets) {
		h.counts[i]++
	}
	h.count++
	h.sum += seconds
}

// routeKey labels HTTP metrics: the mux pattern that matched (never the
// raw path, whose ids would make a series per sandbox) and the status class.
type routeKey struct {
	route string
	class string // "2xx", "4xx", …
}

type metrics struct {
	mu        sync.Mutex
	requests  map[routeKey]uint64
	durations map[string]*histogram // by route
	execDur   histogram

	execs         atomic.Uint64
	creates       atomic.Uint64
	deletes       atomic.Uint64
	auditAppends  atomic.Uint64
	auditFailures atomic.Uint64
	watchers      atomic.Int64
}

func newMetrics() *metrics {
	return &metrics{requests: map[routeKey]uint64{}, durations: map[string]*histogram{}}
}

// request records one HTTP request.
func (m *metrics) request(pattern string, status int, d time.Duration) {
	if pattern == "" || pattern == "/" {
		pattern = "unmatched"
	}
	class := strconv.Itoa(status/100) + "xx"
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[routeKey{pattern, class}]++
	h := m.durations[pattern]
	if h == nil {
		h = &histogram{}
		m.durations[pattern] = h
	}
	h.observe(d.Seconds())
}

// exec records one exec that the sidecar answered.
func (m *metrics) exec(d time.Duration) {
	m.execs.Add(1)
	m.mu.Lock()
	m.execDur.observe(d.Seconds())
	m.mu.Unlock()
}

// serveMetrics serves GET /metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	active, err := s.store.CountActiveSandboxes(r.Context(), "")
	if err != nil {
		return fmt.Errorf("count sandboxes: %w", err)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	s.metrics.write(&b, active)
	d := s.driver
	if cd, ok := d.(countingDriver); ok {
		d = cd.Driver
	}
	if mw, ok := d.(MetricsWriter); ok {
		mw.WriteMetrics(&b)
	}
	_, _ = io.WriteString(w, b.String())
	return nil
}

// write renders every metric; series are sorted so the output is stable.
func (m *metrics) write(b *strings.Builder, active int) {
	m.mu.Lock()
	requests := maps.Clone(m.requests)
	durations := make(map[string]histogram, len(m.durations))
	for k, h := range m.durations {
		durations[k] = histogram{counts: slices.Clone(h.counts), count: h.count, sum: h.sum}
	}
	execDur := histogram{counts: slices.Clone(m.execDur.counts), count: m.execDur.count, sum: m.execDur.sum}
	m.mu.Unlock()

	header(b, "boxkite_http_requests_total", "counter", "HTTP requests served, by route pattern and status class.")
	keys := slices.SortedFunc(maps.Keys(requests), func(a, b routeKey) int {
		if c := strings.Compare(a.route, b.route); c != 0 {
			return c
		}
		return strings.Compare(a.class, b.class)
	})
	for _, k := range keys {
		fmt.Fprintf(b, "boxkite_http_requests_total{route=%s,code=%s} %d\n", quoteLabel(k.route), quoteLabel(k.class), requests[k])
	}
	header(b, "boxkite_http_request_duration_seconds", "histogram", "Time to serve an HTTP request, by route pattern (streams count until they end).")
	for _, route := range slices.Sorted(maps.Keys(durations)) {
		h := durations[route]
		writeHistogram(b, "boxkite_http_request_duration_seconds", "route="+quoteLabel(route), &h)
	}
	header(b, "boxkite_sandboxes_active", "gauge", "Active sandboxes of all accounts.")
	fmt.Fprintf(b, "boxkite_sandboxes_active %d\n", active)
	counter(b, "boxkite_sandbox_creates_total", "Sandboxes this server started.", m.creates.Load())
	counter(b, "boxkite_sandbox_deletes_total", "Sandboxes this server tore down (deleted, expired or failed creates).", m.deletes.Load())
	counter(b, "boxkite_execs_total", "Execs the sidecar answered.", m.execs.Load())
	header(b, "boxkite_exec_duration_seconds", "histogram", "Duration of execs through the control plane.")
	writeHistogram(b, "boxkite_exec_duration_seconds", "", &execDur)
	counter(b, "boxkite_audit_appends_total", "Audit log entries written.", m.auditAppends.Load())
	counter(b, "boxkite_audit_append_failures_total", "Audit log entries that could not be written.", m.auditFailures.Load())
	header(b, "boxkite_watch_streams", "gauge", "Open audit watch streams.")
	fmt.Fprintf(b, "boxkite_watch_streams %d\n", m.watchers.Load())
}

func header(b *strings.Builder, name, kind, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
}

func counter(b *strings.Builder, name, help string, v uint64) {
	header(b, name, "counter", help)
	fmt.Fprintf(b, "%s %d\n", name, v)
}

// writeHistogram writes cumulative buckets, sum and count; labels is ""
// or `name="value"` pairs to put before le.
func writeHistogram(b *strings.Builder, name, labels string, h *histogram) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	var cum uint64
	for i, le := range durationBuckets {
		if h.counts != nil {
			cum += h.counts[i]
		}
		fmt.Fprintf(b, "%s_bucket{%s%sle=\"%s\"} %d\n", name, labels, sep, strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	fmt.Fprintf(b, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, labels, sep, h.count)
	braces := ""
	if labels != "" {
		braces = "{" + labels + "}"
	}
	fmt.Fprintf(b, "%s_sum%s %s\n", name, braces, strconv.FormatFloat(h.sum, 'g', -1, 64))
	fmt.Fprintf(b, "%s_count%s %d\n", name, braces, h.count)
}

// quoteLabel quotes a label value as the text format wants: backslash,
// double quote and newline escaped.
func quoteLabel(v string) string {
	v = strings.ReplaceAll(v, `\`, `\\`)
	v = strings.ReplaceAll(v, `"`, `\"`)
	v = strings.ReplaceAll(v, "\n", `\n`)
	return `"` + v + `"`
}

// MetricsWriter is implemented by drivers with metrics of their own (the
// kube driver's warm pool); /metrics appends them.
type MetricsWriter interface {
	WriteMetrics(w io.Writer)
}

// countingDriver counts the sandboxes the driver starts and tears down.
type countingDriver struct {
	Driver
	m *metrics
}

func (d countingDriver) Create(ctx context.Context, spec Spec) (Endpoint, error) {
	ep, err := d.Driver.Create(ctx, spec)
	if err == nil {
		d.m.creates.Add(1)
	}
	return ep, err
}

func (d countingDriver) Delete(ctx context.Context, id string) error {
	err := d.Driver.Delete(ctx, id)
	if err == nil {
		d.m.deletes.Add(1)
	}
	return err
}
