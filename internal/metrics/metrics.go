// Package metrics holds memgate's Prometheus collectors. Labels carry only
// bounded, non-secret values: route patterns, status codes, decisions.
package metrics

import (
	"slices"
	"strings"
	"time"

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
	JobRuns         *prometheus.CounterVec
	JobDuration     *prometheus.HistogramVec
	GatekeeperEvals *prometheus.CounterVec
	// WebhookDeliveries counts delivery attempts by outcome.
	WebhookDeliveries *prometheus.CounterVec
	// SearchDuration is search latency by route and the signals used.
	SearchDuration *prometheus.HistogramVec
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
		JobRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_job_attempts_total", Help: "Durable job attempts by kind and outcome (done, failed).",
		}, []string{"kind", "outcome"}),
		JobDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memgate_job_attempt_duration_seconds", Help: "Durable job attempt duration by kind.",
			Buckets: []float64{.001, .005, .025, .1, .5, 1, 5, 30, 120},
		}, []string{"kind"}),
		GatekeeperEvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_gatekeeper_evaluations_total", Help: "Extraction gatekeeper evaluations by decision.",
		}, []string{"decision"}),
		SearchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memgate_search_duration_seconds", Help: "Search latency (index stage) by route and the signals used, e.g. dense+lexical.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"route", "signals"}),
		WebhookDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgate_webhook_deliveries_total", Help: "Webhook delivery attempts by outcome (delivered, failed, dead).",
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.HTTPRequests, m.HTTPDuration, m.GateDecisions, m.AuditChainOK, m.ApprovalsExpire,
		m.JobRuns, m.JobDuration, m.GatekeeperEvals, m.WebhookDeliveries, m.SearchDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveJob counts one job attempt; a nil Metrics ignores it.
func (m *Metrics) ObserveJob(kind, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.JobRuns.WithLabelValues(kind, outcome).Inc()
	m.JobDuration.WithLabelValues(kind).Observe(d.Seconds())
}

// ObserveGatekeeper counts one gatekeeper evaluation; a nil Metrics
// ignores it.
func (m *Metrics) ObserveGatekeeper(decision string) {
	if m == nil {
		return
	}
	m.GatekeeperEvals.WithLabelValues(decision).Inc()
}

// ObserveWebhook counts one webhook delivery attempt by outcome; a nil
// Metrics ignores it.
func (m *Metrics) ObserveWebhook(outcome string) {
	if m == nil {
		return
	}
	m.WebhookDeliveries.WithLabelValues(outcome).Inc()
}

// ObserveSearch records one search's latency; signals are joined sorted
// ("dense+lexical") so the label set stays small. A nil Metrics ignores
// it.
func (m *Metrics) ObserveSearch(route string, signals []string, d time.Duration) {
	if m == nil {
		return
	}
	s := slices.Clone(signals)
	slices.Sort(s)
	label := strings.Join(s, "+")
	if label == "" {
		label = "none"
	}
	m.SearchDuration.WithLabelValues(route, label).Observe(d.Seconds())
}
