package proxy

// BenchmarkProxy measures requests/s and p50/p99 latency, loopback only, of
// three setups side by side (run with `go tool benchstat -col /impl`):
//
//   - impl=direct: the client talks to the origin itself (no proxy);
//   - impl=goproxy: a bare goproxy v1.9.2 tuned as docs/benchmarks.md says and with the
//     same upstream transport settings as robotsgate (no HTTP(S)_PROXY,
//     MaxIdleConnsPerHost 256, no compression, KeepAcceptEncoding, the same
//     timeouts, the client's "Connection: close" not copied upstream), MITM
//     with cached ECDSA leaf certificates from a certs.Minter, and none of
//     robotsgate's logic;
//   - impl=robotsgate: proxy.New with a configuration that lets the loopback
//     origin through the egress guard and trusts the origin's certificate
//     (mitm.upstream_ca), its robots.txt cached and allowing the path;
//
// in four modes: plain HTTP with keep-alive, plain HTTP with a new
// connection per request, intercepted HTTPS with keep-alive (one CONNECT
// tunnel per client connection, many requests in it), and intercepted HTTPS
// with a new connection per request (new TCP connection, new CONNECT, full
// TLS handshake: the client keeps no session cache, so nothing is resumed).
// Two more modes measure robotsgate against itself: HTTP/2 to its
// interception, and transparent TLS (mode=https-transparent: the client
// has no proxy, dials the origin's address and reaches robotsgate's
// transparent listener instead, keep-alive, HTTP/1.1), each paired with
// intercepted HTTPS over HTTP/1.1 keep-alive through CONNECT. The kernel's
// redirection is stood in for: the client's dialer connects to the
// transparent listener, and Options.OriginalDst answers with the origin's
// address (e2e/transparent_test.go uses real REDIRECT rules).
//
// Load: -proxybench.conns client goroutines (default 50, as wrk -c 50 in
// docs/benchmarks.md), each with a transport of its own, so in the keep-alive modes
// every goroutine holds exactly one connection for the whole run, and a
// request is sent as soon as the previous one's body is read (closed loop).
// Each goroutine makes one request before the timer starts, so connection
// set-up is not counted in the keep-alive modes. Client, proxy and origin run
// in this one process and share the CPUs: a proxy's own cost is diluted by
// the client's and origin's (a ratio of req/s is closer to 1 than the ratio
// of the proxies' CPU costs); B/op and allocs/op are for the whole process,
// so their difference between impls is the proxy's.
//
// Every response is checked (status 200, exact body, which echoes the
// request-target) so that a broken proxy cannot look fast.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/internal/floorproxy"
	"github.com/robotsgate/robotsgate/upstream"
)

var (
	benchConns    = flag.Int("proxybench.conns", 50, "BenchmarkProxy: concurrent client connections (closed loop)")
	benchUnpaired = flag.Bool("proxybench.unpaired", false, "BenchmarkProxy: no slices of the other proxy in a proxy's runs (for a CPU profile)")
	benchArchive  = flag.Bool("proxybench.archive", true, "BenchmarkProxy: robotsgate keeps its robots.txt archive (archive.dir), as deployed")
	benchBotAuth  = flag.Bool("proxybench.botauth", false, "BenchmarkProxy: robotsgate signs every request it forwards (bot_auth, Web Bot Auth)")
	benchAgainst  = flag.String("proxybench.against", "goproxy", "BenchmarkProxy: the proxy robotsgate's runs are paired with, and its req/s-vs- metric: goproxy, or floor (net/http's server and ReverseProxy, no logic: internal/floorproxy)")
	benchAudit    = flag.Bool("proxybench.audit", false, "BenchmarkProxy: robotsgate writes its audit log (log.audit, with its evidence key), as by default")
)

const (
	benchOriginIP = "127.0.0.2" // the proxies listen on 127.0.0.1
	benchTarget   = "/public/bench?q=1"
	benchRobots   = "User-agent: *\nDisallow: /private\n"
)

// benchBody is what the origin answers to benchTarget: the target echoed,
// then filler up to 1 KiB, a small page.
var benchBody = func() []byte {
	b := []byte("target=" + benchTarget + "\n")
	for len(b) < 1024 {
		b = append(b, "robotsgate proxy benchmark filler\n"...)
	}
	return b[:1024]
}()

type benchMode struct {
	name      string
	tls       bool
	keepAlive bool
	// h2: HTTP/2 to the proxy's interception, h2Streams requests in
	// flight on each client connection (robotsgate only: goproxy's
	// interception speaks HTTP/1.1).
	h2 bool
	// transparent: no proxy; connections reach robotsgate's transparent
	// listener (robotsgate only).
	transparent bool
}

// h2Streams is how many requests share one HTTP/2 connection in
// mode=https-h2: -proxybench.conns streams over conns/h2Streams
// connections (50 over 10 by default).
const h2Streams = 5

var (
	httpsKeepAlive = benchMode{name: "https-keepalive", tls: true, keepAlive: true}
	benchModes     = []benchMode{
		{name: "http-keepalive", keepAlive: true},
		{name: "http-newconn"},
		httpsKeepAlive,
		{name: "https-newconn", tls: true},
		{name: "https-h2", tls: true, keepAlive: true, h2: true},
		{name: "https-transparent", tls: true, keepAlive: true, transparent: true},
	}
)

// benchEnv is everything BenchmarkProxy talks to, started once per run.
type benchEnv struct {
	httpOrigin, httpsOrigin string         // base URLs
	originRoots             *x509.CertPool // trusts the HTTPS origin
	transparent             string         // robotsgate's transparent listener
	originConns             atomic.Int64   // connections the origins accepted
	signed                  atomic.Int64   // requests the origins saw signed
	proxies                 map[string]benchProxy
}

type benchProxy struct {
	url   *url.URL
	roots *x509.CertPool // trusts the proxy's interception CA
}

func BenchmarkProxy(b *testing.B) {
	env := newBenchEnv(b)
	for _, mode := range benchModes {
		b.Run("mode="+mode.name, func(b *testing.B) {
			for _, impl := range mode.impls() {
				b.Run("impl="+impl, func(b *testing.B) { env.run(b, mode, impl) })
			}
		})
	}
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	originCA, err := certs.GenerateCA(time.Now())
	if err != nil {
		b.Fatal(err)
	}
	originMinter, err := certs.NewMinter(originCA, certs.MinterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	env := &benchEnv{originRoots: originCA.CertPool(), proxies: map[string]benchProxy{}}
	env.httpOrigin = "http://" + startBenchServer(b, benchOriginIP, benchOriginHandler(&env.signed), nil, &env.originConns)
	env.httpsOrigin = "https://" + startBenchServer(b, benchOriginIP, benchOriginHandler(&env.signed), originMinter.TLSConfigFor(benchOriginIP), &env.originConns)

	// goproxy, tuned, none of our logic.
	gpCA, err := certs.GenerateCA(time.Now())
	if err != nil {
		b.Fatal(err)
	}
	gpMinter, err := certs.NewMinter(gpCA, certs.MinterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	gpAddr := startBenchServer(b, "127.0.0.1", newBenchGoproxy(gpMinter, originCA.CertPool()), nil, nil)
	env.proxies["goproxy"] = benchProxy{url: &url.URL{Scheme: "http", Host: gpAddr}, roots: gpCA.CertPool()}

	// The net/http floor: net/http's server and ReverseProxy, no logic.
	floorCA, err := certs.GenerateCA(time.Now())
	if err != nil {
		b.Fatal(err)
	}
	floorMinter, err := certs.NewMinter(floorCA, certs.MinterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	floor := floorproxy.New(upstream.NewTransport((&net.Dialer{Timeout: dialTimeout}).DialContext, nil, originCA.CertPool()), floorMinter)
	b.Cleanup(func() { floor.Close() })
	floorAddr := startBenchServer(b, "127.0.0.1", floor, nil, nil)
	env.proxies["floor"] = benchProxy{url: &url.URL{Scheme: "http", Host: floorAddr}, roots: floorCA.CertPool()}

	// robotsgate.
	rgCA, err := certs.GenerateCA(time.Now())
	if err != nil {
		b.Fatal(err)
	}
	upstreamCA := filepath.Join(b.TempDir(), "origin-ca.pem")
	if err := os.WriteFile(upstreamCA, originCA.CertPEM(), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.AdminListen = ""
	cfg.Archive.Dir, cfg.Log.Audit = "", "" // audit off, as measured so far
	if *benchArchive {
		cfg.Archive.Dir = filepath.Join(b.TempDir(), "archive") // as deployed: archiving on
	}
	if *benchAudit {
		dir := b.TempDir()
		cfg.Log.Audit, cfg.Log.EvidenceKey = filepath.Join(dir, "audit.log"), filepath.Join(dir, "evidence-key.pem")
	}
	if *benchBotAuth {
		cfg.BotAuth.SignatureAgent = "https://bots.example/.well-known/http-message-signatures-directory"
		cfg.BotAuth.SignatureAgentForm = "url" // the whole URL in Signature-Agent, as measured
		cfg.BotAuth.Key = filepath.Join(b.TempDir(), "bot-auth-key.pem")
	}
	cfg.Egress.AllowNetworks = []string{benchOriginIP + "/32"}
	cfg.MITM.UpstreamCA = upstreamCA
	httpsDest := netip.MustParseAddrPort(strings.TrimPrefix(env.httpsOrigin, "https://"))
	srv, addr := serveBenchRobotsgate(b, cfg, rgCA, Options{
		OriginalDst: func(net.Conn) (netip.AddrPort, error) { return httpsDest, nil }})
	env.proxies["robotsgate"] = benchProxy{url: &url.URL{Scheme: "http", Host: addr}, roots: rgCA.CertPool()}
	env.transparent = serveBenchTransparent(b, srv)

	// Every setup answers before anything is timed; for robotsgate this also
	// fetches and caches both origins' robots.txt.
	for _, mode := range benchModes {
		for _, impl := range mode.impls() {
			c := env.client(mode, impl)
			if err := benchRequest(c, env.url(mode), make([]byte, len(benchBody)+1)); err != nil {
				b.Fatalf("mode=%s impl=%s: %v", mode.name, impl, err)
			}
			c.CloseIdleConnections()
		}
	}
	if signed := env.signed.Load(); (signed > 0) != *benchBotAuth {
		b.Fatalf("-proxybench.botauth=%v, but the origins saw %d signed requests", *benchBotAuth, signed)
	}
	return env
}

// benchOriginHandler serves robots.txt and benchBody at benchTarget, 404
// elsewhere, without allocating per request beyond net/http's own; signed
// counts the requests that carry a Signature field.
func benchOriginHandler(signed *atomic.Int64) http.Handler {
	robots := []byte(benchRobots)
	robotsLen := fmt.Sprint(len(robots))
	bodyLen := fmt.Sprint(len(benchBody))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Signature"]; ok {
			signed.Add(1)
		}
		h := w.Header()
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		switch {
		case r.URL.Path == "/robots.txt":
			h["Content-Length"] = []string{robotsLen}
			w.Write(robots)
		case r.RequestURI == benchTarget:
			h["Content-Length"] = []string{bodyLen}
			w.Write(benchBody)
		default:
			http.NotFound(w, r)
		}
	})
}

// serveBenchRobotsgate serves robotsgate with cfg and ca on a free
// loopback port until the benchmark ends, logging what a production
// configuration logs (info and above; allowed requests are logged at
// debug) to nowhere, and returns its address.
func serveBenchRobotsgate(b *testing.B, cfg config.Config, ca *certs.CA, opts Options) (*Server, string) {
	b.Helper()
	opts.CA = ca
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The evidence key signs the archive's fetch logs; by default it is
	// created under state_dir, relative to the package's directory: never
	// in the source tree.
	cfg.Log.EvidenceKey = filepath.Join(b.TempDir(), "evidence-key.pem")
	srv, err := New(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return srv, ln.Addr().String()
}

// serveBenchTransparent serves srv's transparent listener on a free
// loopback port until the benchmark ends (Shutdown closes it), and
// returns its address.
func serveBenchTransparent(b *testing.B, srv *Server) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.ServeTransparent(ln)
	return ln.Addr().String()
}

// startBenchServer serves h on ip (TLS when tlsCfg is set) with the client
// timeouts robotsgate uses, and returns its address. It counts the
// connections it accepts in conns, if set.
func startBenchServer(b *testing.B, ip string, h http.Handler, tlsCfg *tls.Config, conns *atomic.Int64) string {
	b.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{
		Handler:           h,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	if conns != nil {
		srv.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// newBenchGoproxy is goproxy as a careful user would deploy it, without
// robotsgate: the upstream transport robotsgate uses (upstream.NewTransport's
// settings, a plain dialer instead of the egress guard), the client's
// "Connection: close" not copied upstream, MITM with an ECDSA leaf
// per host minted once and its tls.Config cached.
func newBenchGoproxy(m *certs.Minter, originRoots *x509.CertPool) http.Handler {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(io.Discard, "", 0)
	gp.ConnectDial = nil
	gp.KeepAcceptEncoding = true
	// robotsgate's own transport, so the settings cannot drift apart.
	dial := (&net.Dialer{Timeout: dialTimeout}).DialContext
	gp.Tr = upstream.NewTransport(dial, nil, originRoots)
	var configs sync.Map // host -> *tls.Config
	tlsConfig := func(host string, _ *goproxy.ProxyCtx) (*tls.Config, error) {
		if c, ok := configs.Load(host); ok {
			return c.(*tls.Config), nil
		}
		c, _ := configs.LoadOrStore(host, m.TLSConfigFor(host))
		return c.(*tls.Config), nil
	}
	gp.OnRequest().HandleConnectFunc(func(host string, _ *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		return &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: tlsConfig}, host
	})
	gp.OnRequest().DoFunc(func(req *http.Request, _ *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		req.Close = false
		return req, nil
	})
	return gp
}

func (env *benchEnv) url(mode benchMode) string {
	if mode.tls {
		return env.httpsOrigin + benchTarget
	}
	return env.httpOrigin + benchTarget
}

// client returns the transport of one client connection: through the proxy
// impl (none for direct), keeping its connection alive or not.
func (env *benchEnv) client(mode benchMode, impl string) *http.Transport {
	tr := &http.Transport{
		DisableKeepAlives:   !mode.keepAlive,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		// No ClientSessionCache: every new TLS connection is a full
		// handshake, nothing resumed.
		TLSClientConfig: &tls.Config{RootCAs: env.originRoots},
	}
	p, ok := env.proxies[impl]
	switch {
	case ok && mode.transparent:
		// What a REDIRECT rule does: the client dials the origin and
		// reaches the transparent listener.
		dial := (&net.Dialer{}).DialContext
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dial(ctx, network, env.transparent)
		}
		tr.TLSClientConfig.RootCAs = p.roots
	case ok:
		tr.Proxy = http.ProxyURL(p.url)
		tr.TLSClientConfig.RootCAs = p.roots
	}
	if mode.h2 {
		tr.ForceAttemptHTTP2 = true
		tr.MaxConnsPerHost = 1 // its streams share one connection
	}
	return tr
}

// impls are the setups measured in a mode.
func (m benchMode) impls() []string {
	if m.h2 || m.transparent {
		return []string{"robotsgate"}
	}
	return []string{"direct", "goproxy", "floor", "robotsgate"}
}

// benchRequest sends one GET and checks the response: 200 and exactly
// benchBody. buf needs len(benchBody)+1 bytes.
func benchRequest(tr *http.Transport, rawURL string, buf []byte) error {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	return benchDo(tr, req, buf)
}

func benchDo(tr *http.Transport, req *http.Request, buf []byte) error {
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.ReadFull(resp.Body, buf)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s (decision %q): %q", resp.Status, resp.Header.Get("X-Robotsgate-Decision"), buf[:n])
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(buf[:n], benchBody) {
		return fmt.Errorf("body of %d bytes (%v) is not the origin's %d bytes: %.80q", n, err, len(benchBody), buf[:n])
	}
	return nil
}

// run times b.N requests spread over the client connections and reports
// req/s and the p50 and p99 latencies (each request from the start of its
// round trip to the end of its body; in the new-connection modes that
// includes connecting, CONNECT and the handshake).
//
// The b.N requests are sent in up to 8 slices, one after the other. The
// two proxies are measured paired: every slice of one is preceded or
// followed (alternately) by a slice of the same size through the other,
// timer stopped. impl=robotsgate reports its req/s as a ratio of goproxy's
// in its run ("req/s-vs-goproxy") and its p99 minus goproxy's
// ("p99-vs-goproxy-ns").
// The machine's speed drifts by tens of percent over minutes on a shared
// VM; two measurements taken seconds apart see the same machine, so the
// paired figures vary far less from run to run than the req/s and p99 of
// separate benchmarks do.
func (env *benchEnv) run(b *testing.B, mode benchMode, impl string) {
	subject := env.newLoad(b, mode, impl)
	defer subject.close()
	var base *benchLoad
	// Each proxy runs paired with the other, so that both of their
	// separate columns are measured with the same company: 50 more client
	// connections and the other proxy's heap and goroutines. HTTP/2 is
	// paired with robotsgate's HTTP/1.1 (as many requests in flight).
	baseMode, other := mode, map[string]string{"robotsgate": *benchAgainst, "goproxy": "robotsgate", "floor": "robotsgate"}[impl]
	if mode.h2 || mode.transparent {
		baseMode, other = httpsKeepAlive, "robotsgate"
	}
	if other != "" && !*benchUnpaired {
		base = env.newLoad(b, baseMode, other)
		defer base.close()
	}
	// Each connection sends at least 5 requests per slice, so that the ramp
	// at a slice's start and end stays a small part of it. Every impl runs
	// in the same slices, paired or not, so that their columns compare.
	slices := min(max(b.N/(subject.conns()*5), 1), 8)
	var subj, ref benchSample
	b.ReportAllocs()
	b.ResetTimer()
	for i := range slices {
		n := b.N/slices + btoi(i < b.N%slices)
		refFirst := i%2 == 1
		if base != nil && refFirst {
			b.StopTimer()
			ref.add(b, base.drive(n))
			b.StartTimer()
		}
		subj.add(b, subject.drive(n))
		if base != nil && !refFirst {
			b.StopTimer()
			ref.add(b, base.drive(n))
			b.StartTimer()
		}
	}
	b.StopTimer()
	if len(subj.lat) != b.N {
		b.Fatalf("%d latencies for %d requests", len(subj.lat), b.N)
	}
	subj.report(b)
	switch {
	case base != nil && mode.h2:
		b.ReportMetric(subj.rate()/ref.rate(), "req/s-vs-h1")
		b.ReportMetric(float64(subj.p99()-ref.p99()), "p99-vs-h1-ns")
	case base != nil && mode.transparent:
		b.ReportMetric(subj.rate()/ref.rate(), "req/s-vs-connect")
		b.ReportMetric(float64(subj.p99()-ref.p99()), "p99-vs-connect-ns")
	case base != nil && impl == "robotsgate":
		b.ReportMetric(subj.rate()/ref.rate(), "req/s-vs-"+*benchAgainst)
		b.ReportMetric(float64(subj.p99()-ref.p99()), "p99-vs-"+*benchAgainst+"-ns")
	}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// benchSample accumulates the slices of one implementation in one run.
type benchSample struct {
	lat         []time.Duration
	elapsed     time.Duration
	cpu         time.Duration
	cpuOK       bool
	originConns int64
}

func (s *benchSample) add(b *testing.B, r benchSlice) {
	if r.err != nil {
		b.Fatal(r.err)
	}
	s.lat = append(s.lat, r.lat...)
	s.elapsed += r.elapsed
	s.cpu += r.cpu
	s.cpuOK = r.cpuOK
	s.originConns += r.originConns
}

func (s *benchSample) rate() float64 { return float64(len(s.lat)) / s.elapsed.Seconds() }

func (s *benchSample) percentile(p int) time.Duration {
	slices.Sort(s.lat)
	return s.lat[(len(s.lat)*p+99)/100-1]
}

func (s *benchSample) p99() time.Duration { return s.percentile(99) }

func (s *benchSample) report(b *testing.B) {
	n := float64(len(s.lat))
	b.ReportMetric(s.rate(), "req/s")
	b.ReportMetric(float64(s.percentile(50)), "p50-ns")
	b.ReportMetric(float64(s.p99()), "p99-ns")
	// Connections the origin accepted per request while timed: 1 for direct
	// without keep-alive, near 0 through a proxy that reuses its upstream
	// connections.
	b.ReportMetric(float64(s.originConns)/n, "origin-conns/op")
	// CPU time of the whole process (client, proxy, origin) per request:
	// unlike req/s and latencies, barely moved by other processes competing
	// for the CPUs, so the difference between impls is the steadier measure
	// of a proxy's own cost on a shared machine.
	if s.cpuOK {
		b.ReportMetric(float64(s.cpu)/n, "cpu-ns/op")
	}
}

// benchLoad is the client side of one implementation in one mode:
// -proxybench.conns client goroutines, each with a transport of its own
// (HTTP/2: h2Streams goroutines share one), its connection set up (in the
// keep-alive modes) by an untimed first request.
type benchLoad struct {
	env        *benchEnv
	target     string
	transports []*http.Transport
}

func (env *benchEnv) newLoad(b *testing.B, mode benchMode, impl string) *benchLoad {
	l := &benchLoad{env: env, target: env.url(mode)}
	streams := 1
	if mode.h2 {
		streams = h2Streams
	}
	for range max(*benchConns/streams, 1) {
		tr := env.client(mode, impl)
		for range streams {
			l.transports = append(l.transports, tr) // one goroutine each
		}
	}
	if r := l.drive(len(l.transports)); r.err != nil {
		l.close()
		b.Fatalf("mode=%s impl=%s: warm-up: %v", mode.name, impl, r.err)
	}
	if mode.h2 {
		resp, err := l.transports[0].RoundTrip(benchGet(l.target))
		if err != nil || resp.ProtoMajor != 2 {
			b.Fatalf("mode=%s impl=%s: not HTTP/2: %v %v", mode.name, impl, resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return l
}

func benchGet(rawURL string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, rawURL, nil)
	return req
}

func (l *benchLoad) conns() int { return len(l.transports) }

func (l *benchLoad) close() {
	for _, tr := range l.transports {
		tr.CloseIdleConnections()
	}
}

// benchSlice is what one drive measured.
type benchSlice struct {
	lat         []time.Duration
	elapsed     time.Duration
	cpu         time.Duration
	cpuOK       bool
	originConns int64
	err         error
}

// drive sends n requests in a closed loop, one goroutine per connection,
// each sending its next request as soon as the previous body is read.
func (l *benchLoad) drive(n int) benchSlice {
	var (
		next    atomic.Int64
		failed  atomic.Bool
		errOnce sync.Once
		res     benchSlice
		ready   sync.WaitGroup
		done    sync.WaitGroup
		start   = make(chan struct{})
	)
	latencies := make([][]time.Duration, len(l.transports))
	ready.Add(len(l.transports))
	done.Add(len(l.transports))
	for i, tr := range l.transports {
		go func() {
			defer done.Done()
			buf := make([]byte, len(benchBody)+1)
			lat := make([]time.Duration, 0, n/len(l.transports)+1)
			req, err := http.NewRequest(http.MethodGet, l.target, nil)
			ready.Done()
			<-start
			for err == nil && !failed.Load() && next.Add(1) <= int64(n) {
				t0 := time.Now()
				if err = benchDo(tr, req, buf); err == nil {
					lat = append(lat, time.Since(t0))
				}
			}
			if err != nil {
				errOnce.Do(func() { res.err = err })
				failed.Store(true)
			}
			latencies[i] = lat
		}()
	}
	ready.Wait()
	conns0 := l.env.originConns.Load()
	cpu0, cpuOK := processCPU()
	t0 := time.Now()
	close(start)
	done.Wait()
	res.elapsed = time.Since(t0)
	cpu1, _ := processCPU()
	res.cpu, res.cpuOK = cpu1-cpu0, cpuOK
	res.originConns = l.env.originConns.Load() - conns0
	res.lat = slices.Concat(latencies...)
	return res
}
