package proxy

import (
	"net"
	"sync"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/listener"
	"github.com/robotsgate/robotsgate/metrics"
)

// Every listener of the process (the proxy port, SOCKS5, the transparent
// listeners, the admin listener) is served behind a listener.Listener
// (Guard): its accept errors are retried, its connections capped
// (connections.max_per_listener, connections.max_per_client), its state
// is part of /readyz and of the metrics, and its address is one of
// robotsgate's own for the egress guard.

// listenerWhat names each kind of listener in log lines and in /readyz.
var listenerWhat = map[string]string{
	"proxy":       "the proxy port",
	"socks":       "the SOCKS5 listener",
	"transparent": "the transparent listener",
	"admin":       "the admin listener",
}

// guardedListeners are the listeners Guard has wrapped.
type guardedListeners struct {
	mu   sync.Mutex
	list []*listener.Listener
}

func (g *guardedListeners) add(l *listener.Listener) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.list = append(g.list, l)
}

// err is the first listener's that is not accepting, nil when all are.
func (g *guardedListeners) err() error {
	g.mu.Lock()
	list := g.list
	g.mu.Unlock()
	for _, l := range list {
		if err := l.Err(); err != nil {
			return err
		}
	}
	return nil
}

// prepareListeners sets the caps of every listener: the configuration's,
// lowered to what the descriptor limit holds for the listeners it asks
// for (listener.Fit), with a warning when they are; and registers the
// counts of transparent self-loops (transparent.go) and of licence fetches
// (licencefetch.go).
func (s *Server) prepareListeners(cfg *config.Config) {
	s.registerLicenceMetrics()
	s.metrics.CounterFunc("robotsgate_transparent_self_loops_total",
		"Transparent connections closed because they came from robotsgate's own upstream connections (a firewall rule that redirects them back).",
		func() float64 { return float64(s.loops.n.Load()) })
	want := listener.Caps{PerListener: cfg.Connections.MaxPerListener, PerClient: cfg.Connections.MaxPerClient}
	n := 0
	for _, addr := range []string{cfg.Listen, cfg.AdminListen, cfg.SOCKS.Listen, cfg.Transparent.HTTPListen, cfg.Transparent.TLSListen} {
		if addr != "" {
			n++
		}
	}
	limit := listener.DescriptorLimit()
	caps, fitted := listener.Fit(want, n, limit)
	if fitted {
		s.log.Warn("the descriptor limit cannot hold every listener's connections: caps lowered to fit "+
			"(raise the limit, e.g. LimitNOFILE= in the systemd unit; docs/operations.md, Descriptor budget)",
			"descriptor_limit", limit, "listeners", n,
			"connections.max_per_listener", want.PerListener, "lowered_to", caps.PerListener,
			"connections.max_per_client", want.PerClient, "client_lowered_to", caps.PerClient)
	}
	s.caps = caps
}

// Guard returns ln behind a listener.Listener of this kind ("proxy",
// "socks", "transparent", "admin"): temporary accept errors retried,
// connections capped, its state part of Ready and of the metrics, its
// address refused by the egress guard (AddSelf). A listener already
// guarded is returned as it is.
func (s *Server) Guard(ln net.Listener, kind string) net.Listener {
	return s.guard(ln, kind)
}

func (s *Server) guard(ln net.Listener, kind string) *listener.Listener {
	if g, ok := ln.(*listener.Listener); ok {
		return g
	}
	what := listenerWhat[kind]
	if what == "" {
		what = "the " + kind + " listener"
	}
	g := listener.New(ln, listener.Options{What: what, MaxConns: s.caps.PerListener, MaxPerClient: s.caps.PerClient, Log: s.log})
	s.AddSelf(ln.Addr())
	s.listeners.add(g)
	s.metrics.AddListener(kind, ln.Addr().String(), func() metrics.ListenerStats {
		st := g.Stats()
		return metrics.ListenerStats{Open: st.Open, OverListenerCap: st.OverListenerCap, OverClientCap: st.OverClientCap,
			AcceptErrors: st.AcceptErrors, Accepting: st.Accepting}
	})
	return g
}
