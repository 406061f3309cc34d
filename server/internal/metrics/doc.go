// Package metrics holds the control plane's Prometheus metrics: a
// registry of each server's own (never the global one) with its Go and
// process collectors (goroutines, threads, GC and memory, open file
// descriptors, CPU time), the request, exec, sandbox and audit counters,
// and the handler of GET /metrics, which appends a driver's own metrics.
package metrics
