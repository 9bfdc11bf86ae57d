package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// ListenerStats is what one listener reports when scraped (package
// listener's counters).
type ListenerStats struct {
	// Open is the number of connections open now.
	Open int
	// OverListenerCap and OverClientCap count connections closed at once
	// because a cap was reached (connections.max_per_listener,
	// connections.max_per_client).
	OverListenerCap, OverClientCap uint64
	// AcceptErrors counts accept errors (EMFILE...), retried or not.
	AcceptErrors uint64
	// Accepting is false while the listener fails to accept or has
	// stopped.
	Accepting bool
}

// listenerCollector reads every listener's counters when scraped. Its
// labels are the listener's kind (proxy, socks, transparent, admin) and
// its address, both fixed by the configuration.
type listenerCollector struct {
	mu   sync.Mutex
	list []listenerSource

	open, up, refused, errors *prometheus.Desc
}

type listenerSource struct {
	kind, addr string
	stats      func() ListenerStats
}

func newListenerCollector() *listenerCollector {
	labels := []string{"listener", "addr"}
	return &listenerCollector{
		open: prometheus.NewDesc("robotsgate_listener_connections", "Connections open now, per listener.", labels, nil),
		up: prometheus.NewDesc("robotsgate_listener_up",
			"1 while the listener accepts connections, 0 while its accept fails (EMFILE...) or after it stopped.", labels, nil),
		refused: prometheus.NewDesc("robotsgate_listener_refused_total",
			"Connections closed as soon as accepted because a cap was reached, by cap (listener: connections.max_per_listener, client: connections.max_per_client).",
			append(labels, "cap"), nil),
		errors: prometheus.NewDesc("robotsgate_listener_accept_errors_total",
			"Accept errors (too many open files...), each retried with a backoff unless the listener stopped.", labels, nil),
	}
}

func (c *listenerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.up
	ch <- c.refused
	ch <- c.errors
}

func (c *listenerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	list := append([]listenerSource(nil), c.list...)
	c.mu.Unlock()
	for _, l := range list {
		s := l.stats()
		up := 0.0
		if s.Accepting {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.Open), l.kind, l.addr)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, l.kind, l.addr)
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(s.OverListenerCap), l.kind, l.addr, "listener")
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(s.OverClientCap), l.kind, l.addr, "client")
		ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(s.AcceptErrors), l.kind, l.addr)
	}
}

// AddListener registers a listener's instruments, labelled with its kind
// (proxy, socks, transparent, admin) and its address, read from stats
// when scraped. A listener added twice (same kind and address) is
// reported once.
func (m *Metrics) AddListener(kind, addr string, stats func() ListenerStats) {
	m.listenersOnce.Do(func() {
		m.listeners = newListenerCollector()
		m.registry.MustRegister(m.listeners)
	})
	c := m.listeners
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range c.list {
		if l.kind == kind && l.addr == addr {
			c.list[i].stats = stats
			return
		}
	}
	c.list = append(c.list, listenerSource{kind: kind, addr: addr, stats: stats})
}
