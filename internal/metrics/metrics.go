// Package metrics holds memgate's Prometheus collectors. Labels carry only
// bounded, non-secret values: route patterns, status codes, decisions.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics is the set of collectors one server registers.
type Metrics struct {
	Registry        *prometheus.Registry
	HTTPRequests    *prometheus.CounterVec
	HTTPDuration    *prometheus.HistogramVec
	GateDecisions   *prometheus.CounterVec
	AuditChainOK    prometheus.Gauge
	ApprovalsExpire prometheus.Counter
}

// New builds and registers the collectors on a fresh registry, together
// with the Go runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_http_requests_total", Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memgate_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		GateDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_gate_decisions_total", Help: "Write gate decisions by decision and reason code.",
		}, []string{"decision", "reason"}),
		AuditChainOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "memgate_audit_chain_ok", Help: "1 when every workspace's audit chain verified at the last check, else 0.",
		}),
		ApprovalsExpire: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memgate_approvals_expired_total", Help: "Approval items rejected because their TTL passed.",
		}),
	}
	reg.MustRegister(m.HTTPRequests, m.HTTPDuration, m.GateDecisions, m.AuditChainOK, m.ApprovalsExpire,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
