// Package proxy is robotsgate's forward proxy: HTTP and CONNECT handling,
// interception, relaying, refusals and the audit log, and the source of the
// admin listener (package admin). Every way a request comes in is decided by
// one admission path (admit.go).
// It judges every plain HTTP
// request and every request inside an intercepted CONNECT tunnel by the
// policy engine before anything of it leaves, renders refusals in one
// place, and turns upstream failures into proper responses.
//
// Client connections are served by net/http's server: the proxy port
// (HTTP/1.1) and the inside of intercepted tunnels (HTTP/1.1 and HTTP/2,
// by ALPN; plain HTTP/1.1 when the tunnel carries no TLS). A framing guard
// in front of every HTTP/1.x connection refuses ambiguous request framing.
// goproxy answers CONNECTs (refusal, blind tunnel or interception), and
// allowed requests are relayed by httputil.ReverseProxy, which keeps the
// intermediary's rules of RFC 9110: hop-by-hop fields, 1xx responses,
// trailers, upgrades only as requested, truncated bodies aborted.
//
// The proxy must not relay any request it has not judged: no upgrade but a
// requested WebSocket, no pipelined request after a framing it cannot
// follow, no request in a tunnel for another host than the tunnel's.
package proxy

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/listener"
	"github.com/robotsgate/robotsgate/metrics"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/rsl/rslcache"
	"github.com/robotsgate/robotsgate/tdmrep/tdmcache"
	"github.com/robotsgate/robotsgate/transparent"
	"github.com/robotsgate/robotsgate/witness"
)

// Timeouts. Upstream ones bound each phase of talking to an origin; client
// ones free connections from clients that stall or idle.
const (
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 60 * time.Second
	upstreamIdleTimeout   = 90 * time.Second  // idle pooled upstream connection
	upstreamReadTimeout   = 120 * time.Second // silence inside a response or tunnel
	maxHeaderBytes        = 1 << 20           // request head; beyond it 431
)

// Options carries what New cannot derive from the configuration.
type Options struct {
	// CA signs intercepted connections' certificates; required when
	// mitm.enabled is true.
	CA *certs.CA
	// Logger receives operational logs; nil means slog.Default().
	Logger *slog.Logger
	// Resolver, when set, replaces the egress guard's DNS resolver, and Dial
	// the dialer it connects with, and connects to the parent proxy with
	// (tests: a name that resolves to a forbidden address, a dialer that
	// records instead of connecting).
	Resolver egress.Resolver
	Dial     egress.DialFunc
	// OriginalDst, when set, replaces the kernel's answer to where a
	// transparent listener's client connected (SO_ORIGINAL_DST): for
	// benchmarks, which connect to the listener without a firewall rule.
	OriginalDst func(net.Conn) (netip.AddrPort, error)
}

// Server is the proxy. Create it with New, run it with Serve, stop it with
// Shutdown.
type Server struct {
	log      *slog.Logger
	resolver *resolver.Resolver
	tdmrep   *tdmcache.Cache // tdmrep.json files, for clients with TDM purposes
	rsl      *rslcache.Cache // RSL licences the sites name, for clients with purposes
	minter   *certs.Minter
	dnsOpt   egress.Resolver
	dialOpt  egress.DialFunc
	origDst  func(net.Conn) (netip.AddrPort, error) // a transparent client's original destination
	roots    *x509.CertPool                         // upstream TLS: origins, and an https:// parent proxy
	gp       *goproxy.ProxyHttpServer               // answers CONNECTs
	upstream *upstream
	relay    *httputil.ReverseProxy // forwards allowed requests
	current  atomic.Pointer[settings]
	self     atomic.Pointer[[]netip.AddrPort]
	selfMu   sync.Mutex // AddSelf
	// proxySrv serves the proxy port; tunnelSrv, fed by tunnelLn, the
	// inside of every intercepted tunnel.
	proxySrv, tunnelSrv *http.Server
	tunnelLn            *tunnelListener
	timeouts            config.Timeouts // fixed at New: they belong to the servers
	metrics             *metrics.Metrics
	auditLog            *audit.Writer
	witness             *witness.Client
	coldGates           coldGates    // robots.cold_fetches_per_client
	authFails           authFailures // auth.failure_limit
	auditFails          auditFailures
	stats               *admin.Stats
	archive             *archive.Writer // nil: archive.dir is ""
	tlsFails            tlsFailures     // clients that failed the intercepted handshake
	// caPath is the CA certificate clients must trust (mitm.ca_cert,
	// absolute), which the messages on failed handshakes name.
	caPath string
	// listening is the proxy port's address once Serve runs (listen's
	// port 0 resolved), for the PAC file.
	listening atomic.Pointer[string]
	serving   atomic.Bool
	// started is closed once Serve has set serving (Serving).
	started     chan struct{}
	startedOnce sync.Once
	// paceStore is the pacing schedule, kept across reloads (a new Pacer
	// is built on it with each configuration), and governor the origins'
	// pauses and response times, whose parameters a reload changes.
	paceStore pacing.Store
	governor  *pacing.Governor
	// fleetPermits holds pacing.max_concurrency's permits across a fleet
	// (nil: this process alone).
	fleetPermits pacing.ConcurrencyStore
	// ready, when set, is part of /readyz (the shared pacing store).
	ready func(context.Context) error
	// closeStore and closeShared release the Redis clients, if any.
	closeStore, closeShared func() error
	redis                   redisClients   // the same clients, for metrics
	denyWatch               *denyListWatch // re-reads egress.deny_hosts_files
	inbound                 listeners      // SOCKS5 and transparent listeners
	listeners               guardedListeners
	own                     *ownConns // robotsgate's own upstream connections
	licences                licenceFetches
	caps                    listener.Caps // every listener's (connections)
}

// settings is the part of the server that a configuration reload replaces.
type settings struct {
	cfg    config.Config
	engine *policy.Engine
	guard  *egress.Guard
	parent *parentProxy // upstream.proxy; nil: direct
	// signers sign requests for Web Bot Auth (bot_auth,
	// clients[].signature_agent) and know the clients' max_price.
	signers *signers
}

// New builds a Server from a validated configuration.
func New(cfg config.Config, opts Options) (*Server, error) {
	s := &Server{log: cmp.Or(opts.Logger, slog.Default()), dnsOpt: opts.Resolver, dialOpt: opts.Dial,
		origDst: opts.OriginalDst, metrics: metrics.New(), stats: admin.NewStats(), started: make(chan struct{})}
	if s.origDst == nil {
		s.origDst = transparent.OriginalDst
	}
	if s.dialOpt == nil && cfg.Transparent.Mark != 0 {
		// Every upstream connection is marked, for the firewall rule that
		// keeps them from being redirected back to robotsgate.
		s.dialOpt = transparent.MarkedDialer(uint32(cfg.Transparent.Mark), dialTimeout).DialContext
	}
	s.own = newOwnConns()
	s.dialOpt = s.own.wrap(s.dialOpt) // every upstream connection known, for transparent self-loops
	roots, err := upstreamRoots(cfg.MITM.UpstreamCA)
	if err != nil {
		return nil, err
	}
	s.roots = roots
	s.caPath = cfg.MITM.CACert
	if abs, err := filepath.Abs(s.caPath); err == nil {
		s.caPath = abs
	}
	if cfg.MITM.Enabled {
		if opts.CA == nil {
			return nil, errors.New("proxy: mitm.enabled needs a CA")
		}
		if s.minter, err = certs.NewMinter(opts.CA, certs.MinterOptions{}); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	key, err := s.evidenceKey(&cfg)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if err := s.openArchive(cfg.Archive, key); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if err := s.newResolver(cfg, roots); err != nil {
		return nil, err
	}
	if err := s.openWitness(cfg); err != nil {
		return nil, fmt.Errorf("proxy: log.witness: %w", err)
	}
	if err := s.openAudit(cfg.Log, key); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if err := s.openPacingStore(cfg.Pacing); err != nil {
		return nil, err
	}
	if err := s.Reload(cfg); err != nil {
		return nil, err
	}
	s.prepareListeners(&cfg)
	s.startDenyListWatch()
	s.registerGauges()
	var decisions []string
	for _, d := range audit.Decisions() { // every decision's counters without a lock per request
		decisions = append(decisions, d.Name)
	}
	s.metrics.PrepareRequests(append(decisions, metrics.MonitoredDecision)...)
	for _, kind := range audit.SignalKinds { // every label shown from the start, at 0
		s.metrics.UsageRefusals.WithLabelValues(kind)
	}
	s.upstream = newUpstream(s.dial, s.proxyFor, roots, s.log, s.metrics)
	s.upstream.parent = func() *parentProxy { return s.settings().parent }
	if p := s.settings().parent; p != nil {
		s.log.Info("upstream connections go through a parent proxy", "parent", p.redacted, "no_proxy", p.noProxy)
	}
	s.gp = s.newGoproxy()
	s.relay = s.newRelay()
	s.timeouts = cfg.Timeouts
	s.tunnelLn = newTunnelListener()
	s.proxySrv = s.newHTTPServer(http.HandlerFunc(s.serveProxyPort), nil)
	s.tunnelSrv = s.newHTTPServer(http.HandlerFunc(s.serveTunnelRequest), s.tunnelLn)
	go s.tunnelSrv.Serve(s.tunnelLn)
	return s, nil
}

// newHTTPServer returns a server for client connections: the same limits
// and timeouts on the proxy port and inside tunnels. The tunnel server
// also serves HTTP/2, on intercepted TLS connections that negotiated it
// (net/http sets it up for the *tls.Conns it is given, having no TLSConfig
// of its own).
func (s *Server) newHTTPServer(h http.Handler, tunnels *tunnelListener) *http.Server {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(tunnels != nil) // the proxy port is plain TCP: no h2c
	return &http.Server{
		Protocols:         protocols,
		Handler:           s.observe(guardFraming(h)),
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: s.timeouts.ClientHeader.Duration(),
		IdleTimeout:       s.timeouts.ClientIdle.Duration(),
		ErrorLog:          log.New(slogWriter{s.log}, "", 0),
		ConnContext:       tunnels.connContext,
	}
}

// newResolver creates the robots.txt resolver, fetching through the egress
// guard, and the tdmrep.json cache on it; with a Redis pacing store, both
// share fetched files through the same Redis.
func (s *Server) newResolver(cfg config.Config, roots *x509.CertPool) error {
	var shared, sharedTDM, sharedRSL resolver.Store
	if cfg.Pacing.Store == config.StoreRedis {
		rs, ts, err := s.openSharedStores(cfg.Pacing.Redis)
		if err != nil {
			return err
		}
		ls, err := s.openRSLStore(cfg.Pacing.Redis)
		if err != nil {
			return errors.Join(err, rs.Close(), ts.Close())
		}
		shared, sharedTDM, sharedRSL = rs, ts, ls
		s.closeShared = func() error { return errors.Join(rs.Close(), ts.Close(), ls.Close()) }
	}
	r, err := resolver.New(resolver.Config{
		Store:        shared,
		UserAgent:    cfg.Robots.FetchUserAgent,
		FetchTimeout: cfg.Robots.FetchTimeout.Duration(),
		CacheEntries: cfg.Robots.CacheEntries,
		CacheBytes:   int64(cfg.Robots.CacheBytes),
		MinTTL:       cfg.Robots.MinTTL.Duration(),
		MaxTTL:       cfg.Robots.MaxTTL.Duration(),
		RetryMin:     cfg.Robots.RetryMin.Duration(),
		RetryMax:     cfg.Robots.RetryMax.Duration(),
		DialContext:  s.dial,
		Proxy:        s.proxyFor,
		RootCAs:      roots,
		OnFetch:      s.robotsFetched,
		OnAnswer:     s.onAnswer(),
		// robots.txt and tdmrep.json fetches, each redirect hop, are
		// signed with the gateway's key when bot_auth is set.
		WrapTransport: s.signFetches,
	})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	s.resolver = r
	// tdmrep.json files: fetched by the resolver's client, with robots.txt's
	// cache bounds and freshness, archived alike.
	s.tdmrep, err = tdmcache.New(tdmcache.Config{
		Resolver:     r,
		Store:        sharedTDM,
		CacheEntries: cfg.Robots.CacheEntries,
		CacheBytes:   int64(cfg.Usage.CacheBytes),
		OnAnswer:     s.onTDMRepAnswer(),
	})
	if err != nil {
		r.Close()
		return fmt.Errorf("proxy: %w", err)
	}
	// RSL licences: by URL, with the same client, freshness and archive.
	s.rsl, err = rslcache.New(rslcache.Config{
		Resolver:     r,
		Store:        sharedRSL,
		CacheEntries: cfg.Robots.CacheEntries,
		OnAnswer:     s.onRSLAnswer(),
		// Licence documents are robotsgate's own requests to their
		// origins (licencefetch.go).
		Admit: s.admitLicenceFetch,
		Miss:  s.licenceMiss,
	})
	if err != nil {
		s.tdmrep.Close()
		r.Close()
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

// openPacingStore creates the schedule's store: in memory, or Redis behind
// the pacing.on_store_error policy. Changing it needs a restart.
func (s *Server) openPacingStore(p config.Pacing) error {
	if p.Store != config.StoreRedis {
		s.paceStore = pacing.NewMemory(pacing.MemoryOptions{})
		s.governor = s.newGovernor(p, nil)
		return nil
	}
	r, err := s.openRedisPacing(p.Redis)
	if err != nil {
		return err
	}
	f, err := pacing.NewFallback(r, pacing.FallbackOptions{OnError: pacing.OnError(p.OnStoreError),
		OnFailure: func(error) { s.metrics.StoreErrors.Inc() }})
	if err != nil {
		r.Close()
		return fmt.Errorf("proxy: pacing: %w", err)
	}
	s.governor = s.newGovernor(p, r.GovernorShared())
	s.fleetPermits = r
	ctx, stop := context.WithCancel(context.Background())
	followed, ready := make(chan struct{}), make(chan struct{})
	go func() { // the fleet's pauses and response times
		defer close(followed)
		r.Follow(ctx, s.governor, func() { close(ready) })
	}()
	select { // the pauses in force, before the first request (or check) is judged
	case <-ready:
	case <-time.After(2 * time.Second):
	}
	s.paceStore, s.ready = f, r.Healthy
	s.closeStore = func() error {
		stop()
		<-followed
		return r.Close()
	}
	return nil
}

func (s *Server) registerGauges() {
	s.registerRedisMetrics()
	s.metrics.GaugeFunc("robotsgate_robots_cache_entries", "Origins whose robots.txt is cached.",
		func() float64 { return float64(s.resolver.Stats().Entries) })
	s.metrics.GaugeFunc("robotsgate_robots_cache_bytes", "Memory the robots.txt cache keeps (robots.cache_bytes bounds it).",
		func() float64 { return float64(s.resolver.Stats().Bytes) })
	s.metrics.GaugeFunc("robotsgate_tdmrep_cache_bytes", "Memory the tdmrep.json cache keeps (usage.cache_bytes bounds it).",
		func() float64 { return float64(s.tdmrep.Stats().Bytes) })
	s.metrics.GaugeFunc("robotsgate_rsl_cache_bytes", "Memory the RSL licence cache keeps (at most 16 MiB).",
		func() float64 { return float64(s.rsl.Stats().Bytes) })
	s.metrics.GaugeFunc("robotsgate_origins_in_backoff", "Origins paused now (they answered 429 or 503), or whose pause is over and whose first request after it is unanswered: their requests wait.",
		func() float64 { return float64(len(s.governor.PausedNow(pacing.MaxPausedOrigins))) })
	s.metrics.CounterFunc("robotsgate_robots_cache_hits_total", "robots.txt lookups answered from the cache.",
		func() float64 { return float64(s.resolver.Stats().Hits) })
	s.metrics.CounterFunc("robotsgate_robots_cache_misses_total", "robots.txt lookups that waited for a fetch.",
		func() float64 { return float64(s.resolver.Stats().Misses) })
	s.metrics.CounterFunc("robotsgate_audit_write_failures_total", "Audit records not written (a full disk, an unwritable file).",
		func() float64 { return float64(s.auditLog.Failures()) })
	s.metrics.CounterFunc("robotsgate_archive_dropped_total", "robots.txt archive records not written (queue full or disk error).",
		func() float64 {
			if s.archive == nil {
				return 0
			}
			return float64(s.archive.Dropped())
		})
	s.metrics.CounterFunc("robotsgate_certificates_minted_total", "Leaf certificates minted for intercepted hosts.",
		func() float64 {
			if s.minter == nil {
				return 0
			}
			return float64(s.minter.Minted())
		})
}

// ReopenAudit reopens the audit log file, for log rotation (SIGHUP).
func (s *Server) ReopenAudit() error { return s.auditLog.Reopen() }

// Reload applies a new configuration to the parts that can change while
// running: clients, sites, the trap guard, robots.strict_paths, egress,
// mitm.skip_hosts, identification and the parent proxy (upstream; new
// connections use the new one). Listen addresses, the CA, the audit
// log path and the robots.txt cache settings need a restart.
func (s *Server) Reload(cfg config.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	lists, err := s.denyLists(cfg.Egress.DenyHostsFiles)
	if err != nil {
		return err
	}
	guard, err := newGuard(cfg.Egress, lists, s.dnsOpt, s.dialOpt, s.selfAddrs())
	if err != nil {
		return err
	}
	parent, err := newParentProxy(cfg.Upstream, s.roots)
	if err != nil {
		return err
	}
	sg, err := loadSigners(&cfg)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	governor := s.governor // its state outlives the configuration
	if !cfg.Pacing.Backoff.Enabled && cfg.Pacing.Adaptive.Factor == 0 {
		governor = nil // off: requests do not even look at it
	}
	engine, err := policy.New(policy.Config{
		Resolver:      s.resolver,
		TDMRep:        s.tdmrep,
		TDMUnknown:    cfg.Usage.OnUnknown,
		RSL:           s.rsl,
		LicenseServer: cfg.Usage.OnLicenseServer,
		RSLUnstated:   cfg.Usage.RSLUnstatedUsage,
		StrictPaths:   cfg.Robots.StrictPaths,
		ScanHTML:      cfg.Usage.ScanHTML,
		Clients:       cfg.Clients,
		Auth:          cfg.Auth,
		DenyUnmatched: cfg.ClientsDefault == config.ClientsDeny,
		Sites:         cfg.Sites,
		Trap:          cfg.Trap,
		Pacer: pacing.New(pacing.Options{
			Store:          s.paceStore,
			MaxWait:        cfg.Pacing.MaxWait.Duration(),
			MaxConcurrency: cfg.Pacing.MaxConcurrency,
			// A shared store takes slots beyond it for corrupt.
			LongestInterval: longestInterval(cfg),
			Shared:          s.fleetPermits,
			Governor:        governor,
		}),
		Governor: governor,
		Limits: pacing.Limits{
			Floor:         cfg.Pacing.DefaultDelay.Duration(),
			Max:           cfg.Pacing.MaxDelay.Duration(),
			RefuseOverMax: cfg.Pacing.OverMaxDelay == config.OverMaxDelayRefuse,
		},
		PaceByOrigin: cfg.Pacing.Key == config.KeyOrigin,
	})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	s.governor.SetParams(governorParams(cfg.Pacing))
	if old := s.settings(); old != nil {
		if keys := restartOnlyChanges(&old.cfg, &cfg); len(keys) > 0 {
			s.log.Warn("configuration reloaded, but these keys keep their running values until a restart", "keys", keys)
		}
	}
	s.current.Store(&settings{cfg: cfg, engine: engine, guard: guard, parent: parent, signers: sg})
	return nil
}

func (s *Server) settings() *settings { return s.current.Load() }

func newGuard(e config.Egress, lists *egress.DenyLists, r egress.Resolver, dial egress.DialFunc, self []netip.AddrPort) (*egress.Guard, error) {
	g := &egress.Guard{
		BlockPrivate: e.BlockPrivateNetworks, Resolver: r, Dial: dial, DialTimeout: dialTimeout,
		AllowHosts: lower(e.AllowHosts), DenyHosts: lower(e.DenyHosts), DenyLists: lists, Self: self,
		AllowPorts: ports(e.AllowPorts), TunnelPorts: ports(e.TunnelPorts),
	}
	for _, c := range e.AllowNetworks {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("proxy: egress.allow_networks: %w", err)
		}
		g.AllowNetworks = append(g.AllowNetworks, p.Masked())
	}
	return g, nil
}

// dial connects to an origin through the current egress guard, or to the
// parent proxy (the destination was checked by proxyFor); upstream
// connections get a read deadline refreshed by traffic, so a silent origin
// cannot hold a request or tunnel forever.
func (s *Server) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	st := s.settings()
	dial := st.guard.DialContext
	if st.parent != nil && addr == st.parent.addr {
		dial = s.dialParent
	}
	c, err := dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return newIdleConn(c, upstreamReadTimeout), nil
}

func upstreamRoots(file string) (*x509.CertPool, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if file == "" {
		return roots, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("proxy: mitm.upstream_ca: %w", err)
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("proxy: mitm.upstream_ca: no certificate in %s", file)
	}
	return roots, nil
}

// ports converts validated port numbers.
func ports(ps []int) []uint16 {
	out := make([]uint16, len(ps))
	for i, p := range ps {
		out[i] = uint16(p)
	}
	return out
}

func lower(ss []string) []string {
	out := make([]string, len(ss))
	for i, v := range ss {
		out[i] = strings.ToLower(v)
	}
	return out
}

// selfAddrs returns the addresses the proxy listens on, every local
// interface address for an unspecified listen address.
func (s *Server) selfAddrs() []netip.AddrPort {
	p := s.self.Load()
	if p == nil {
		return nil
	}
	return *p
}

func (s *Server) setSelf(addr net.Addr) { s.AddSelf(addr) }

// AddSelf adds an address robotsgate listens on (the proxy's, the admin
// listener's; every local interface's for an unspecified one) to those
// the egress guard refuses: a request to it would loop through the proxy,
// or read the admin listener through it.
func (s *Server) AddSelf(addr net.Addr) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return
	}
	add := []netip.AddrPort{ap}
	if ap.Addr().IsUnspecified() {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if p, err := netip.ParsePrefix(a.String()); err == nil {
					add = append(add, netip.AddrPortFrom(p.Addr(), ap.Port()))
				}
			}
		}
	}
	s.selfMu.Lock()
	defer s.selfMu.Unlock()
	self := append(slices.Clone(s.selfAddrs()), add...)
	s.self.Store(&self)
	for { // the running settings with a guard that knows self (a Reload from now on reads s.self)
		old := s.settings()
		g := *old.guard
		g.Self = self
		next := *old
		next.guard = &g
		if s.current.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Serve accepts proxy connections on ln until Shutdown. Destinations equal
// to ln's address are refused (a request to the proxy itself would loop).
func (s *Server) Serve(ln net.Listener) error {
	s.setSelf(ln.Addr())
	s.Listening(ln.Addr())
	s.warnIfOpen(ln.Addr())
	s.serving.Store(true)
	defer s.serving.Store(false)
	s.startedOnce.Do(func() { close(s.started) })
	err := s.proxySrv.Serve(newProxyListener(s.guard(ln, "proxy"), s))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Serving is closed once Serve runs: from then until Serve returns,
// Ready reports the proxy port as serving (the listener accepts; the
// connections that queued before are answered). Whoever starts Serve in a
// goroutine waits on it before announcing the proxy or asking /readyz.
func (s *Server) Serving() <-chan struct{} { return s.started }

// Listening tells the server the proxy port's address before Serve runs
// (the PAC file names it; the admin listener may answer first).
func (s *Server) Listening(addr net.Addr) {
	a := addr.String()
	s.listening.Store(&a)
}

// warnIfOpen warns when the proxy listens beyond loopback for anyone: no
// clients entries and clients_default allow make an open proxy.
func (s *Server) warnIfOpen(addr net.Addr) {
	cfg := s.settings().cfg
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || ap.Addr().IsLoopback() || len(cfg.Clients) > 0 || cfg.ClientsDefault == config.ClientsDeny {
		return
	}
	s.log.Warn("open proxy: listening beyond loopback with no clients entries, anyone who can reach "+addr.String()+
		" may use it; set clients_default: deny and add clients entries (cidr or user)", "listen", addr.String())
}

// Shutdown stops accepting connections and waits, until ctx is done, for
// in-flight requests (tunnels included) to finish; then it closes what is
// left.
func (s *Server) Shutdown(ctx context.Context) error {
	// In parallel: a CONNECT's connection stays busy on the proxy port until
	// its intercepted tunnel ends.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if s.tunnelSrv.Shutdown(ctx) != nil {
			s.tunnelSrv.Close()
		}
	}()
	err := s.proxySrv.Shutdown(ctx)
	if err != nil {
		s.proxySrv.Close()
	}
	s.inbound.close()
	wg.Wait()
	s.denyWatch.close()
	s.tdmrep.Close()
	s.rsl.Close()
	s.resolver.Close()
	s.upstream.close()
	s.auditLog.Close()
	s.closeWitness()
	if s.archive != nil {
		s.archive.Close()
	}
	for _, closeRedis := range []func() error{s.closeStore, s.closeShared, s.closeRedis} {
		if closeRedis != nil {
			closeRedis()
		}
	}
	return err
}

// mitmHost reports whether CONNECTs to host are intercepted.
func (st *settings) mitmHost(host string) bool {
	if !st.cfg.MITM.Enabled {
		return false
	}
	for _, glob := range st.cfg.MITM.SkipHosts {
		if ok, _ := path.Match(glob, host); ok {
			return false
		}
	}
	return true
}

// checkDestination applies the port rules and the egress guard to a
// destination before anything is sent to it.
func (s *Server) checkDestination(ctx context.Context, o origin.Origin, blindTunnel bool) error {
	g := s.settings().guard
	if err := g.CheckPort(o.Port, blindTunnel); err != nil {
		return err
	}
	return g.CheckHost(ctx, o.Host, o.Port)
}

// slogWriter adapts net/http's and goproxy's line loggers to slog.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Debug(string(trimNewline(p)), "component", "http")
	return len(p), nil
}

// Printf implements goproxy.Logger.
func (w slogWriter) Printf(format string, v ...any) {
	w.log.Debug(fmt.Sprintf(format, v...), "component", "goproxy")
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
