package metrics

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"
)

// durationBuckets are the upper bounds, in seconds, of the request and
// exec duration histograms: from a cached key lookup to a long exec.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// Metrics are one server's metrics. The audit log counts its appends and
// failures on AuditAppends and AuditFailures; Watchers are the open watch
// streams.
type Metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec   // by route pattern and status class
	durations *prometheus.HistogramVec // by route pattern
	execDur   prometheus.Histogram

	execs         prometheus.Counter
	creates       prometheus.Counter
	deletes       prometheus.Counter
	AuditAppends  prometheus.Counter
	AuditFailures prometheus.Counter
	Watchers      prometheus.Gauge
}

// New registers a server's metrics; active counts active sandboxes for
// the boxkite_sandboxes_active gauge at each scrape.
func New(active func() (float64, error)) *Metrics {
	reg := prometheus.NewRegistry()
	f := promauto.With(reg)
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &Metrics{
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
		AuditAppends:  counter("boxkite_audit_appends_total", "Audit log entries written."),
		AuditFailures: counter("boxkite_audit_append_failures_total", "Audit log entries that could not be written."),
		Watchers:      f.NewGauge(prometheus.GaugeOpts{Name: "boxkite_watch_streams", Help: "Open audit watch streams."}),
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

// Request records one HTTP request.
func (m *Metrics) Request(pattern string, status int, d time.Duration) {
	if pattern == "" || pattern == "/" {
		pattern = "unmatched"
	}
	m.requests.WithLabelValues(pattern, strconv.Itoa(status/100)+"xx").Inc()
	m.durations.WithLabelValues(pattern).Observe(d.Seconds())
}

// Exec records one exec that the sidecar answered.
func (m *Metrics) Exec(d time.Duration) {
	m.execs.Inc()
	m.execDur.Observe(d.Seconds())
}

// SandboxCreated and SandboxDeleted count the sandboxes the driver
// started and tore down.
func (m *Metrics) SandboxCreated() { m.creates.Inc() }

func (m *Metrics) SandboxDeleted() { m.deletes.Inc() }

// Handler serves the registry in the text format, then d's own metrics
// if it is a Writer (either driver's warm pool).
func (m *Metrics) Handler(d any) http.Handler {
	var g prometheus.Gatherer = m.reg
	if mw, ok := d.(Writer); ok {
		g = prometheus.Gatherers{g, driverGatherer{mw}}
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

// driverGatherer reads a Writer's text exposition into metric
// families, so the driver's metrics join the registry's in one answer.
type driverGatherer struct{ mw Writer }

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

// Writer is implemented by drivers with metrics of their own (the local
// and the kube driver's warm pools); /metrics appends them.
type Writer interface {
	WriteMetrics(w io.Writer)
}
