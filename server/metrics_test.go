package server_test

import (
	"bufio"
	"context"
	"flag"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// scrape reads /metrics into "name{labels}" → value, checking that every
// sample belongs to a metric with HELP and TYPE lines.
func scrape(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	resp, body := e.do("GET", "/metrics", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	out := map[string]float64{}
	typed := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, kind, _ := strings.Cut(f, " ")
			typed[name] = kind
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("malformed sample %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		series := line[:i]
		name, _, _ := strings.Cut(series, "{")
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if typed[name] == "" && typed[base] != "histogram" && typed[base] != "summary" {
			t.Errorf("sample %q has no TYPE line", line)
		}
		out[series] = v
	}
	return out
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.create(e.KeyB, api.CreateSandboxRequest{})
	e.exec(e.KeyA, sb.ID, "true")
	e.exec(e.KeyA, sb.ID, "true")
	e.do("GET", sandboxPath("no-such-sandbox"), e.KeyA, nil)
	if resp, _ := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if err := e.Server.AppendAudit(context.Background(), sb.ID, e.AcctA.ID, "view"); err != nil {
		t.Fatal(err)
	}

	m := scrape(t, e)
	tests := []struct {
		series string
		want   float64
	}{
		{`boxkite_http_requests_total{code="2xx",route="POST /v1/sandboxes"}`, 2},
		{`boxkite_http_requests_total{code="2xx",route="POST /v1/sandboxes/{id}/exec"}`, 2},
		{`boxkite_http_requests_total{code="4xx",route="GET /v1/sandboxes/{id}"}`, 1},
		{`boxkite_http_requests_total{code="2xx",route="DELETE /v1/sandboxes/{id}"}`, 1},
		{`boxkite_http_request_duration_seconds_count{route="POST /v1/sandboxes/{id}/exec"}`, 2},
		{`boxkite_http_request_duration_seconds_bucket{route="POST /v1/sandboxes/{id}/exec",le="+Inf"}`, 2},
		{`boxkite_sandboxes_active`, 1},
		{`boxkite_sandbox_creates_total`, 2},
		{`boxkite_sandbox_deletes_total`, 1},
		{`boxkite_execs_total`, 2},
		{`boxkite_exec_duration_seconds_count`, 2},
		{`boxkite_exec_duration_seconds_bucket{le="+Inf"}`, 2},
		{`boxkite_audit_appends_total`, 3},
		{`boxkite_audit_append_failures_total`, 0},
		{`boxkite_watch_streams`, 0},
	}
	for _, tt := range tests {
		got, ok := m[tt.series]
		if !ok {
			t.Errorf("%s missing", tt.series)
			continue
		}
		if got != tt.want {
			t.Errorf("%s = %v, want %v", tt.series, got, tt.want)
		}
	}
	// The Go and process collectors: goroutines, threads, memory, fds.
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_heap_alloc_bytes", "process_open_fds", "process_max_fds", "process_resident_memory_bytes"} {
		if m[name] <= 0 {
			t.Errorf("%s = %v, want a positive reading", name, m[name])
		}
	}
	// Buckets are cumulative.
	prev := -1.0
	for _, le := range []string{"0.001", "0.01", "0.1", "1", "10", "300", "+Inf"} {
		v := m[`boxkite_exec_duration_seconds_bucket{le="`+le+`"}`]
		if v < prev {
			t.Errorf("bucket le=%s = %v is below the one before (%v)", le, v, prev)
		}
		prev = v
	}
	// Raw paths, with their ids, never become labels.
	for series := range m {
		if strings.Contains(series, sb.ID) {
			t.Errorf("series %s names a sandbox id", series)
		}
	}
	// The scrape itself is counted by the next one.
	if got := scrape(t, e)[`boxkite_http_requests_total{code="2xx",route="GET /metrics"}`]; got != 1 {
		t.Errorf("GET /metrics counted %v times, want 1", got)
	}
}

// labelName finds the names in a sample's label block.
var labelName = regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)

var updateMetricsGolden = flag.Bool("update", false, "rewrite testdata/metrics_series.golden from this server's /metrics")

// seriesNames is each metric family of a scrape with its type and the
// label names of its samples: "boxkite_execs_total counter" or
// "boxkite_http_requests_total counter {code,route}". Values are left out.
func seriesNames(t *testing.T, e *env) []string {
	t.Helper()
	_, body := e.do("GET", "/metrics", "", nil)
	kinds := map[string]string{}
	labels := map[string]map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, kind, _ := strings.Cut(f, " ")
			kinds[name] = kind
			labels[name] = map[string]bool{}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series := line[:max(strings.LastIndexByte(line, ' '), 0)] // label values may hold spaces
		name, rest, _ := strings.Cut(series, "{")
		for fam := range kinds {
			if name == fam || strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count") == fam {
				name = fam
			}
		}
		for _, m := range labelName.FindAllStringSubmatch(rest, -1) {
			if labels[name] != nil {
				labels[name][m[1]] = true
			}
		}
	}
	var out []string
	for name, kind := range kinds {
		s := name + " " + kind
		if ls := slices.Sorted(maps.Keys(labels[name])); len(ls) > 0 {
			s += " {" + strings.Join(ls, ",") + "}"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestMetricsSeriesKept: every metric family the hand-written exposition
// served (testdata/metrics_series.golden, written from it with -update)
// is still served, with its type and labels, by the client_golang one;
// dashboards and alerts keep working.
func TestMetricsSeriesKept(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.exec(e.KeyA, sb.ID, "true")
	got := seriesNames(t, e)
	const golden = "testdata/metrics_series.golden"
	if *updateMetricsGolden {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !slices.Contains(got, want) {
			t.Errorf("series %q of the golden is no longer served", want)
		}
	}
}

// poolDriver is a fake driver with metrics of its own, as the kube
// driver's warm pool has.
type poolDriver struct{ *fakeDriver }

func (poolDriver) WriteMetrics(w io.Writer) {
	io.WriteString(w, "# HELP boxkite_test_pool_ready Warm things.\n# TYPE boxkite_test_pool_ready gauge\nboxkite_test_pool_ready 3\n")
}

// TestMetricsIncludeDriver: a driver's own metrics join the registry's in
// one exposition.
func TestMetricsIncludeDriver(t *testing.T) {
	srv, err := server.New(server.Config{}, openStore(t, t.TempDir()), poolDriver{&fakeDriver{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(httptestServer(t, srv) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"\nboxkite_test_pool_ready 3\n", "# TYPE boxkite_test_pool_ready gauge", "\nboxkite_sandboxes_active 0\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
