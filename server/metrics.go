package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"
)

// GET /metrics: the control plane's metrics, served by
// prometheus/client_golang from a registry of this server's own (never
// the global one), with its Go and process collectors: goroutines,
// threads, GC and memory, open file descriptors, CPU time.

// durationBuckets are the upper bounds, in seconds, of the request and
// exec duration histograms: from a cached key lookup to a long exec.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec   // by route pattern and status class
	durations *prometheus.HistogramVec // by route pattern
	execDur   prometheus.Histogram

	execs         prometheus.Counter
	creates       prometheus.Counter
	deletes       prometheus.Counter
	auditAppends  prometheus.Counter
	auditFailures prometheus.Counter
	watchers      prometheus.Gauge
}

// newMetrics registers the server's metrics; active counts active
// sandboxes for the boxkite_sandboxes_active gauge at each scrape.
func newMetrics(active func() (float64, error)) *metrics {
	reg := prometheus.NewRegistry()
	f := promauto.With(reg)
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		reg: reg,
		// route is the mux pattern that matched (never the raw path, whose
		// ids would make a series per sandbox); code is the status class.
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "boxkite_http_requests_total", Help: "HTTP requests served, by route pattern and status class.",
		}, []string{"route", "code"}),
		durations: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "boxkite_http_request_duration_seconds", Help: "Time to serve an HTTP request, by route pattern (streams count until they end).",
			Buckets: durationBuckets,
		}, []string{"route"}),
		execDur: f.NewHistogram(prometheus.HistogramOpts{
			Name: "boxkite_exec_duration_seconds", Help: "Duration of execs through the control plane.", Buckets: durationBuckets,
		}),
		execs:         counter("boxkite_execs_total", "Execs the sidecar answered."),
		creates:       counter("boxkite_sandbox_creates_total", "Sandboxes this server started."),
		deletes:       counter("boxkite_sandbox_deletes_total", "Sandboxes this server tore down (deleted, expired or failed creates)."),
		auditAppends:  counter("boxkite_audit_appends_total", "Audit log entries written."),
		auditFailures: counter("boxkite_audit_append_failures_total", "Audit log entries that could not be written."),
		watchers:      f.NewGauge(prometheus.GaugeOpts{Name: "boxkite_watch_streams", Help: "Open audit watch streams."}),
	}
	reg.MustRegister(activeSandboxes{active}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// activeSandboxes is the boxkite_sandboxes_active gauge, read from the
// store at each scrape.
type activeSandboxes struct{ count func() (float64, error) }

var activeSandboxesDesc = prometheus.NewDesc("boxkite_sandboxes_active", "Active sandboxes of all accounts.", nil, nil)

func (a activeSandboxes) Describe(ch chan<- *prometheus.Desc) { ch <- activeSandboxesDesc }

func (a activeSandboxes) Collect(ch chan<- prometheus.Metric) {
	n, err := a.count()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(activeSandboxesDesc, fmt.Errorf("count sandboxes: %w", err))
		return
	}
	ch <- prometheus.MustNewConstMetric(activeSandboxesDesc, prometheus.GaugeValue, n)
}

// request records one HTTP request.
func (m *metrics) request(pattern string, status int, d time.Duration) {
	if pattern == "" || pattern == "/" {
		pattern = "unmatched"
	}
	m.requests.WithLabelValues(pattern, strconv.Itoa(status/100)+"xx").Inc()
	m.durations.WithLabelValues(pattern).Observe(d.Seconds())
}

// exec records one exec that the sidecar answered.
func (m *metrics) exec(d time.Duration) {
	m.execs.Inc()
	m.execDur.Observe(d.Seconds())
}

// serveMetrics serves GET /metrics: this server's registry, then the
// driver's own metrics if it has some (the kube driver's warm pool).
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	var g prometheus.Gatherer = s.metrics.reg
	d := s.driver
	if cd, ok := d.(countingDriver); ok {
		d = cd.Driver
	}
	if mw, ok := d.(MetricsWriter); ok {
		g = prometheus.Gatherers{g, driverGatherer{mw}}
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(w, r)
	return nil
}

// driverGatherer reads a MetricsWriter's text exposition into metric
// families, so the driver's metrics join the registry's in one answer.
type driverGatherer struct{ mw MetricsWriter }

func (g driverGatherer) Gather() ([]*dto.MetricFamily, error) {
	var b bytes.Buffer
	g.mw.WriteMetrics(&b)
	parser := expfmt.NewTextParser(prommodel.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(&b)
	if err != nil {
		return nil, fmt.Errorf("parse driver metrics: %w", err)
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		out = append(out, fams[name])
	}
	return out, nil
}

// MetricsWriter is implemented by drivers with metrics of their own (the
// kube driver's warm pool); /metrics appends them.
type MetricsWriter interface {
	WriteMetrics(w io.Writer)
}

// countingDriver counts the sandboxes the driver starts and tears down.
type countingDriver struct {
	model.Driver
	m *metrics
}

func (d countingDriver) Create(ctx context.Context, spec model.Spec) (model.Endpoint, error) {
	ep, err := d.Driver.Create(ctx, spec)
	if err == nil {
		d.m.creates.Inc()
	}
	return ep, err
}

func (d countingDriver) Delete(ctx context.Context, id string) error {
	err := d.Driver.Delete(ctx, id)
	if err == nil {
		d.m.deletes.Inc()
	}
	return err
}
