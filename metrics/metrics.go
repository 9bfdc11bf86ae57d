// Package metrics holds robotsgate's Prometheus metrics: one registry, the
// instruments the proxy updates, and gauges read from other components when
// scraped. Names follow Prometheus conventions (robotsgate_ prefix, base
// units, _total for counters); docs/operations.md lists them.
//
// It must not decide anything, and its label values must come from fixed
// sets (decision values, methods, error kinds, signal kinds) or the
// operator's own infrastructure (the Redis nodes in use), never from
// hosts, paths or user agents that clients or origins choose, so that the
// number of series stays bounded.
package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MonitoredDecision is the requests metric's decision label of a refusal
// only logged (a client in monitor mode): robotsgate_requests_total counts
// it under this value, robotsgate_monitored_requests_total says which
// refusal it would have been.
const MonitoredDecision = "monitored"

// Metrics is the set of instruments. Its zero value is not usable: use New.
type Metrics struct {
	registry *prometheus.Registry
	requests map[string]map[string]prometheus.Counter // read-only after PrepareRequests

	// Requests counts decisions by decision ("allow", "disallow"...) and
	// method; a monitor-mode client's would-be refusal as "monitored".
	Requests *prometheus.CounterVec
	// MonitoredRequests counts the refusals only logged (clients in
	// monitor mode, whose requests went on), by the decision enforcing
	// would have made; Requests counts them under decision "monitored".
	MonitoredRequests *prometheus.CounterVec
	// RobotsFetches counts robots.txt fetches by outcome ("ok",
	// "unavailable", "unreachable").
	RobotsFetches *prometheus.CounterVec
	// RobotsFetchSeconds is the latency of robots.txt fetches.
	RobotsFetchSeconds prometheus.Histogram
	// PacingWaitSeconds is how long paced requests were held.
	PacingWaitSeconds prometheus.Histogram
	// PacingHeld is the number of requests being held right now.
	PacingHeld prometheus.Gauge
	// UpstreamErrors counts failed upstream requests by kind (the RFC 9209
	// error type: "connection_refused", "dns_error"...).
	UpstreamErrors *prometheus.CounterVec
	// StoreErrors counts failed calls to the shared (Redis) pacing store.
	StoreErrors prometheus.Counter
	// OriginBackoffs counts the answers that paused an origin (started or
	// lengthened its pause), by cause: the status ("429", "503"...) or
	// "connection".
	OriginBackoffs *prometheus.CounterVec
	// AuthFailures counts proxy credentials that failed (a wrong password,
	// an unknown user).
	AuthFailures prometheus.Counter
	// ClientTLSFailures counts failed TLS handshakes of clients inside
	// intercepted tunnels, by reason ("unknown_ca": the client does not
	// trust robotsgate's CA).
	ClientTLSFailures *prometheus.CounterVec
	// ProxyTLSServed counts client connections that spoke TLS to the
	// proxy port (an https:// proxy URL) and were served over TLS;
	// ProxyTLSRefused those closed because there is no CA to answer
	// with (mitm.enabled false).
	ProxyTLSServed, ProxyTLSRefused prometheus.Counter
	// UsageRefusals counts requests refused by an AI-usage signal, by the
	// kind of signal ("tdmrep", "x-robots-tag"...: audit.SignalKinds),
	// monitor-mode refusals included as in Requests.
	UsageRefusals *prometheus.CounterVec
	// SignedRequests counts the requests sent upstream with robotsgate's
	// Web Bot Auth signature, by what they were: "proxied" (a client's
	// request, a pay-per-crawl retry included) or "fetch" (robots.txt,
	// tdmrep.json, each redirect hop).
	SignedRequests *prometheus.CounterVec
	// PriceAnswers counts origins' 402 answers with a crawler-price (pay
	// per crawl), by what robotsgate did: "paid" (retried and answered
	// 2xx), "retry_refused" (retried, not 2xx), "over_max" (price above
	// the client's max_price, or in another currency), "no_max_price",
	// "unsigned" (no signing for the client, or the client signed itself),
	// "bad_price", "not_replayable" (a request body).
	PriceAnswers *prometheus.CounterVec
	// CrawlerCharged sums what origins charged (crawler-charged), in
	// currency units, by currency: only the currencies of clients'
	// max_price, so its labels are bounded by the configuration.
	CrawlerCharged *prometheus.CounterVec
	// CrawlerOvercharges counts paid retries whose crawler-charged is
	// above the crawler-price quoted, in another currency, or unreadable.
	CrawlerOvercharges prometheus.Counter
	// ReloadSuccessful is 1 when the last configuration reload applied
	// (or none was tried), 0 when it was rejected; ReloadTimestamp is when
	// the configuration last applied (start or reload), in Unix seconds.
	ReloadSuccessful, ReloadTimestamp prometheus.Gauge

	// listeners reads the listeners' counters (AddListener).
	listeners     *listenerCollector
	listenersOnce sync.Once
}

// New creates the instruments in a fresh registry, with Go runtime and
// process collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{registry: r}
	m.Requests = counterVec(r, "robotsgate_requests_total", "Requests judged by the proxy, by decision and method.", "decision", "method")
	m.MonitoredRequests = counterVec(r, "robotsgate_monitored_requests_total", "Requests of clients in monitor mode that would have been refused (forwarded), by the decision enforcing would have made.", "decision")
	m.RobotsFetches = counterVec(r, "robotsgate_robots_fetches_total", "robots.txt fetches by outcome.", "outcome")
	m.RobotsFetchSeconds = histogram(r, "robotsgate_robots_fetch_duration_seconds", "Duration of robots.txt fetches.",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10})
	m.PacingWaitSeconds = histogram(r, "robotsgate_pacing_wait_seconds", "Time paced requests were held before going upstream.",
		[]float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30, 60})
	m.PacingHeld = gauge(r, "robotsgate_pacing_held_requests", "Requests currently held for their pacing slot.")
	m.UpstreamErrors = counterVec(r, "robotsgate_upstream_errors_total", "Failed upstream requests by RFC 9209 error type.", "kind")
	m.StoreErrors = counter(r, "robotsgate_pacing_store_errors_total", "Failed calls to the shared pacing store.")
	m.OriginBackoffs = counterVec(r, "robotsgate_origin_backoffs_total", "Answers that paused an origin (429, 503...), by cause.", "cause")
	m.AuthFailures = counter(r, "robotsgate_auth_failures_total", "Proxy credentials that failed (wrong password, unknown user).")
	m.ClientTLSFailures = counterVec(r, "robotsgate_client_tls_failures_total", "Failed TLS handshakes of clients in intercepted tunnels, by reason.", "reason")
	m.ProxyTLSServed = counter(r, "robotsgate_proxy_tls_connections_total", "Client connections that spoke TLS to the proxy port (an https:// proxy URL), served over TLS.")
	m.ProxyTLSRefused = counter(r, "robotsgate_proxy_tls_refused_total", "Client connections that spoke TLS to the proxy port, closed because mitm.enabled is false: use http:// in the proxy URL.")
	m.UsageRefusals = counterVec(r, "robotsgate_usage_refusals_total", "Requests refused by an AI-usage signal, by kind of signal.", "signal")
	m.SignedRequests = counterVec(r, "robotsgate_signed_requests_total", "Requests sent upstream with robotsgate's Web Bot Auth signature, by kind (proxied, fetch).", "kind")
	m.PriceAnswers = counterVec(r, "robotsgate_crawler_price_answers_total", "Origins' 402 answers with a crawler-price (pay per crawl), by what robotsgate did.", "outcome")
	m.CrawlerCharged = counterVec(r, "robotsgate_crawler_charged_total", "What origins charged under pay per crawl (crawler-charged), in currency units, by currency.", "currency")
	m.CrawlerOvercharges = counter(r, "robotsgate_crawler_overcharges_total", "Paid retries whose crawler-charged is above the crawler-price quoted (or cannot be read).")
	m.ReloadSuccessful = gauge(r, "robotsgate_config_last_reload_successful", "Whether the last configuration reload applied (1) or was rejected (0).")
	m.ReloadTimestamp = gauge(r, "robotsgate_config_last_reload_success_timestamp_seconds", "When the configuration last applied, at start or by a reload.")
	m.ReloadSuccessful.Set(1)
	m.ReloadTimestamp.SetToCurrentTime()
	return m
}

// knownMethods get a counter looked up without locking (CountRequest).
var knownMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT"}

// CountRequest counts one decision. For the decisions and methods named
// with PrepareRequests the counter comes from a read-only map (no lock on
// the per-request path); others go through the CounterVec.
func (m *Metrics) CountRequest(decision, method string) {
	if byMethod, ok := m.requests[decision]; ok {
		if c, ok := byMethod[method]; ok {
			c.Inc()
			return
		}
	}
	m.Requests.WithLabelValues(decision, method).Inc()
}

// PrepareRequests creates the request counters of these decisions for the
// common methods; call it once, before serving.
func (m *Metrics) PrepareRequests(decisions ...string) {
	m.requests = make(map[string]map[string]prometheus.Counter, len(decisions))
	for _, d := range decisions {
		byMethod := make(map[string]prometheus.Counter, len(knownMethods))
		for _, meth := range knownMethods {
			byMethod[meth] = m.Requests.WithLabelValues(d, meth)
		}
		m.requests[d] = byMethod
	}
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// GaugeFunc registers a gauge whose value is read from fn when scraped.
func (m *Metrics) GaugeFunc(name, help string, fn func() float64) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// CounterFunc registers a counter whose value is read from fn when scraped;
// fn must never decrease.
func (m *Metrics) CounterFunc(name, help string, fn func() float64) {
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// LabeledCounterFunc registers one series of a counter whose value is read
// from fn when scraped, with label set to value; register each value of the
// label with the same name, help and label. fn must never decrease.
func (m *Metrics) LabeledCounterFunc(name, help, label, value string, fn func() float64) {
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: name, Help: help, ConstLabels: prometheus.Labels{label: value},
	}, fn))
}

// InfoFunc registers an info gauge: when scraped, fn returns label value
// sets, each exported as one series of value 1 with labels (so the series
// are what fn says now, e.g. the Redis nodes in use, never more).
func (m *Metrics) InfoFunc(name, help string, labels []string, fn func() [][]string) {
	m.registry.MustRegister(&infoCollector{desc: prometheus.NewDesc(name, help, labels, nil), fn: fn})
}

// infoCollector is InfoFunc's collector.
type infoCollector struct {
	desc *prometheus.Desc
	fn   func() [][]string
}

func (c *infoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *infoCollector) Collect(ch chan<- prometheus.Metric) {
	for _, values := range c.fn() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, values...)
	}
}

func counterVec(r *prometheus.Registry, name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	r.MustRegister(c)
	return c
}

func counter(r *prometheus.Registry, name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	r.MustRegister(c)
	return c
}

func gauge(r *prometheus.Registry, name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	r.MustRegister(g)
	return g
}

func histogram(r *prometheus.Registry, name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	r.MustRegister(h)
	return h
}
