package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
)

// origin is a real HTTP or HTTPS server on a loopback address that records
// the request-targets it receives.
type testOrigin struct {
	*httptest.Server
	mu      sync.Mutex
	targets []string
	conns   atomic.Int64
}

const testRobots = "User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: FooBot\nDisallow: /foo-only\n"

func (o *testOrigin) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.targets...)
}

func (o *testOrigin) saw(target string) bool {
	for _, t := range o.seen() {
		if t == target {
			return true
		}
	}
	return false
}

// startOrigin starts an origin on ip that serves robots (or the status in
// robotsStatus) at /robots.txt and echoes the request-target elsewhere.
func startOrigin(t testing.TB, ip string, tlsOn bool, robots string, robotsStatus int) *testOrigin {
	t.Helper()
	var cfg *tls.Config
	if tlsOn {
		cfg = &tls.Config{}
	}
	return startOriginTLS(t, ip, cfg, robots, robotsStatus)
}

// startOriginTLS is startOrigin with the origin's TLS configuration (nil:
// plain HTTP; no certificate: httptest's).
func startOriginTLS(t testing.TB, ip string, tlsCfg *tls.Config, robots string, robotsStatus int) *testOrigin {
	t.Helper()
	o := &testOrigin{}
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.targets = append(o.targets, r.RequestURI)
		o.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			if robotsStatus != 0 {
				w.WriteHeader(robotsStatus)
				return
			}
			io.WriteString(w, robots)
			return
		}
		w.Header().Set("X-Origin", "yes")
		fmt.Fprintf(w, "target=%s", r.RequestURI)
	})
	addr := ip + ":0"
	if strings.Contains(ip, ":") { // host:port
		addr = ip
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	o.Server = httptest.NewUnstartedServer(mux)
	o.Server.Listener.Close()
	o.Server.Listener = ln
	o.Server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	if tlsCfg != nil {
		if tlsCfg.GetCertificate != nil || len(tlsCfg.Certificates) > 0 {
			o.TLS = tlsCfg
		}
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	return o
}

// testProxy is a running proxy with what a client needs to use it.
type testProxy struct {
	srv    *Server
	addr   string
	ca     *certs.CA
	logMu  *sync.Mutex
	logBuf *strings.Builder
}

// logText returns what the proxy has logged so far.
func (p *testProxy) logText() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.logBuf.String()
}

// testConfig allows the loopback addresses the tests use as origins and
// trusts the httptest certificate for upstream TLS.
func testConfig(t testing.TB, upstreamCA *x509.Certificate) config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.AdminListen = ""
	cfg.Egress.AllowNetworks = []string{"127.0.0.1/32", "127.0.0.2/32", "127.0.0.3/32"}
	cfg.Robots.FetchTimeout = config.Duration(2 * time.Second)
	cfg.Archive.Dir = "" // tests that archive set their own
	cfg.Log.Audit = ""   // tests that audit too
	cfg.Log.EvidenceKey = filepath.Join(t.TempDir(), "evidence-key.pem")
	if upstreamCA != nil {
		file := filepath.Join(t.TempDir(), "upstream.pem")
		os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: upstreamCA.Raw}), 0o644)
		cfg.MITM.UpstreamCA = file
	}
	return cfg
}

func startProxy(t testing.TB, cfg config.Config) *testProxy {
	t.Helper()
	return startProxyWith(t, cfg, Options{})
}

func startProxyWith(t testing.TB, cfg config.Config, opts Options) *testProxy {
	t.Helper()
	if cfg.Archive.Dir != "" && !filepath.IsAbs(cfg.Archive.Dir) {
		cfg.Archive.Dir = filepath.Join(t.TempDir(), cfg.Archive.Dir) // never in the source tree
	}
	ca, err := certs.GenerateCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	logs := &strings.Builder{}
	mu := &sync.Mutex{}
	opts.CA = ca
	opts.Logger = slog.New(slog.NewTextHandler(lockedWriter{mu, logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Shutdown(t.Context())
		<-done
	})
	// Return once the server serves: a test may ask /readyz at once
	// (regression: /readyz 503 "not serving yet" on a loaded machine).
	select {
	case <-srv.Serving():
	case err := <-done:
		t.Fatalf("Serve returned before serving: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not start serving within 10 s")
	}
	return &testProxy{srv: srv, addr: ln.Addr().String(), ca: ca, logMu: mu, logBuf: logs}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// client returns an http.Client that uses the proxy and trusts its CA.
func (p *testProxy) client() *http.Client {
	u, _ := url.Parse("http://" + p.addr)
	return &http.Client{
		Transport: &http.Transport{
			Proxy:           http.ProxyURL(u),
			TLSClientConfig: &tls.Config{RootCAs: p.ca.CertPool()},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func get(t *testing.T, c *http.Client, rawURL string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// rawConn is a client connection to the proxy for sending requests exactly
// as written.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialProxy(t *testing.T, p *testProxy) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// connect opens an intercepted tunnel to hostport and returns the TLS side.
func (c *rawConn) connect(t *testing.T, p *testProxy, hostport, serverName string) *rawConn {
	t.Helper()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(c.Conn, &tls.Config{RootCAs: p.ca.CertPool(), ServerName: serverName})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return &rawConn{Conn: tc, r: bufio.NewReader(tc)}
}

// roundTrip writes a raw request and reads the response with its body.
func (c *rawConn) roundTrip(t *testing.T, raw string) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	return c.readResponse(t, "the response to "+firstLine(raw))
}

// readResponse reads the next response with its body; what names it in a
// failure.
func (c *rawConn) readResponse(t *testing.T, what string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("reading %s: %v", what, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// serveAt serves h over plain HTTP on a port of loopback address ip until
// the test ends (origins on addresses of their own: pauses, sites and the
// egress guard tell them apart by host).
func serveAt(t testing.TB, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	o := httptest.NewUnstartedServer(h)
	o.Listener.Close()
	o.Listener = ln
	o.Start()
	t.Cleanup(o.Close)
	return o
}
