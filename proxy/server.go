// Package proxy is robotsgate's forward proxy: it wires every way a
// request comes in (the proxy port, CONNECT, the requests inside
// intercepted tunnels, SOCKS5, transparent connections, /explain and
// check) to the one admission path (admit.go), and serves the admin
// listener's source (package admin).
//
// Each way in creates the record of its request (record.go: observe for
// the proxy port and the tunnels' servers, opening for a SOCKS5 CONNECT or
// a transparent connection) and passes it on explicitly; the record is
// written to the audit log when the request is done. Admission, the
// response judgement and the upstream side's failures answer with a
// refusal, a value (package refusal, which describes a policy decision
// too) rendered at the edge the client came through: an HTTP response, a
// SOCKS5 reply, a transparent connection closed. /explain and check show
// the same value.
//
// Client connections are served by net/http's server: the proxy port
// (HTTP/1.1) and the inside of intercepted tunnels (HTTP/1.1 and HTTP/2,
// by ALPN; plain HTTP/1.1 when the tunnel carries no TLS). A framing guard
// in front of every HTTP/1.x connection refuses ambiguous request framing;
// it and the other wire-level guards live in package wire. goproxy answers
// CONNECTs (refusal, blind tunnel or interception), and allowed requests
// are relayed by httputil.ReverseProxy, which keeps the intermediary's
// rules of RFC 9110: hop-by-hop fields, 1xx responses, trailers, upgrades
// only as requested, truncated bodies aborted. Package upstream sends them
// (the transport, the parent proxy, signing, pay per crawl) and opens
// blind tunnels, through the one dial of every upstream connection.
//
// What the ways in need beside the decision has a package of its own:
// refusal (what robotsgate answers in place of the origin), evidence (the
// audit log, its witness, the robots.txt archive), headscan (reading a
// response's HTML head), limits (the per-client and per-origin counts),
// fleetredis (a fleet's shared stores), and admin's counters for the
// status page.
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
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/evidence"
	"github.com/robotsgate/robotsgate/fleetredis"
	"github.com/robotsgate/robotsgate/limits"
	"github.com/robotsgate/robotsgate/listener"
	"github.com/robotsgate/robotsgate/metrics"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/transparent"
	"github.com/robotsgate/robotsgate/upstream"
	"github.com/robotsgate/robotsgate/wire"
)

// Timeouts and limits of client connections (the upstream side has its
// own, package upstream).
const (
	dialTimeout         = upstream.DialTimeout // the egress guard's dials, robotsgate's own too
	tlsHandshakeTimeout = 10 * time.Second     // an intercepted client's handshake
	maxHeaderBytes      = wire.MaxHeadBytes    // request head; beyond it 431
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
	tdmrep   *doccache.TDMRepCache // tdmrep.json files, for clients with TDM purposes
	rsl      *doccache.RSLCache    // RSL licences the sites name, for clients with purposes
	minter   *certs.Minter
	dnsOpt   egress.Resolver
	dialOpt  egress.DialFunc
	origDst  func(net.Conn) (netip.AddrPort, error) // a transparent client's original destination
	roots    *x509.CertPool                         // upstream TLS: origins, and an https:// parent proxy
	gp       *goproxy.ProxyHttpServer               // answers CONNECTs
	upstream *upstream.Upstream
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
	evidence            *evidence.Evidence  // the audit log, its witness, the robots.txt archive
	coldGates           limits.ColdGates    // robots.cold_fetches_per_client
	authFails           limits.AuthFailures // auth.failure_limit
	stats               *admin.Stats
	tlsFails            admin.TLSFailures // clients that failed the intercepted handshake
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
	redis                   *fleetredis.Redis // pacing.store: redis (nil without), for Shutdown and metrics
	denyWatch               *denyListWatch    // re-reads egress.deny_hosts_files
	inbound                 listeners         // SOCKS5 and transparent listeners
	listeners               guardedListeners
	own                     *upstream.OwnConns // robotsgate's own upstream connections
	loops                   selfLoops          // transparent connections refused as robotsgate's own
	licences                licenceFetches
	caps                    listener.Caps // every listener's (connections)
}

// settings is the part of the server that a configuration reload replaces.
type settings struct {
	cfg    config.Config
	engine *policy.Engine
	guard  *egress.Guard
	parent *upstream.Parent // upstream.proxy; nil: direct
	// signers sign requests for Web Bot Auth (bot_auth,
	// clients[].signature_agent) and know the clients' max_price.
	signers *upstream.Signers
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
	s.own = upstream.NewOwnConns()
	s.dialOpt = s.own.Wrap(s.dialOpt) // every upstream connection known, for transparent self-loops
	roots, err := upstream.Roots(cfg.MITM.UpstreamCA)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	s.roots = roots
	s.upstream = upstream.New(upstream.Options{Route: s.route, Exchange: exchangeOf, Hold: s.holdForPause, DialParent: s.dialOpt, Roots: roots,
		Log: s.log, Metrics: s.metrics})
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
	if s.evidence, err = evidence.Open(cfg, s.log, s.metrics); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if err := s.newResolver(cfg, roots); err != nil {
		return nil, err
	}
	var witnessDial egress.DialFunc
	if cfg.Transparent.Mark != 0 { // not redirected back by the firewall rule
		witnessDial = transparent.MarkedDialer(uint32(cfg.Transparent.Mark), dialTimeout).DialContext
	}
	if err := s.evidence.OpenLog(cfg, witnessDial); err != nil {
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
	if p := s.settings().parent; p != nil {
		s.log.Info("upstream connections go through a parent proxy", "parent", p.String(), "no_proxy", p.NoProxy())
	}
	s.gp = s.newGoproxy()
	s.relay = s.newRelay()
	s.timeouts = cfg.Timeouts
	s.tunnelLn = newTunnelListener()
	s.proxySrv = s.newHTTPServer(s.serveProxyPort, nil)
	s.tunnelSrv = s.newHTTPServer(s.serveTunnelRequest, s.tunnelLn)
	go s.tunnelSrv.Serve(s.tunnelLn)
	return s, nil
}

// newHTTPServer returns a server for client connections: the same limits
// and timeouts on the proxy port and inside tunnels. The tunnel server
// also serves HTTP/2, on intercepted TLS connections that negotiated it
// (net/http sets it up for the *tls.Conns it is given, having no TLSConfig
// of its own).
func (s *Server) newHTTPServer(serve serveRecorded, tunnels *tunnelListener) *http.Server {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(tunnels != nil) // the proxy port is plain TCP: no h2c
	return &http.Server{
		Protocols:         protocols,
		Handler:           s.observe(s.guardFraming(serve)),
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: s.timeouts.ClientHeader.Duration(),
		IdleTimeout:       s.timeouts.ClientIdle.Duration(),
		ErrorLog:          log.New(slogWriter{s.log}, "", 0),
		ConnContext:       tunnels.connContext,
	}
}

// ReopenAudit reopens the audit log file, for log rotation (SIGHUP).
func (s *Server) ReopenAudit() error { return s.evidence.Reopen() }

// Serve accepts proxy connections on ln until Shutdown. Destinations equal
// to ln's address are refused (a request to the proxy itself would loop).
func (s *Server) Serve(ln net.Listener) error {
	s.setSelf(ln.Addr())
	s.Listening(ln.Addr())
	s.warnIfOpen(ln.Addr())
	s.serving.Store(true)
	defer s.serving.Store(false)
	s.startedOnce.Do(func() { close(s.started) })
	err := s.proxySrv.Serve(wire.NewProxyListener(s.guard(ln, "proxy"), s.timeouts.ClientHeader.Duration(), s.proxyTLS, s.log))
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
	s.upstream.Close()
	s.evidence.Close()
	for _, closeRedis := range []func() error{s.closeStore, s.closeShared, s.redis.Close} {
		if closeRedis != nil {
			closeRedis()
		}
	}
	return err
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
