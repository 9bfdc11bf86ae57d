package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/config"
)

// transparentEnv is a proxy with a transparent listener whose clients all
// "connected to" dest (the kernel's redirection is stood in for by
// Options.OriginalDst; e2e/transparent_test.go uses the kernel's), names
// resolved by a map, and an HTTPS origin with certificates for its names
// from an upstream CA the proxy trusts.
type transparentEnv struct {
	p      *testProxy
	ln     string // the transparent listener
	origin *testOrigin
	dest   netip.AddrPort
	pool   *x509.CertPool // trusts the origin's certificates
	audit  string
}

func startTransparent(t *testing.T, useTLS bool, edit func(c *config.Config, originPort int)) *transparentEnv {
	t.Helper()
	e := &transparentEnv{}
	var tlsCfg *tls.Config
	cfg := testConfig(t, nil)
	if useTLS {
		ca, err := certs.GenerateCA(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		m, err := certs.NewMinter(ca, certs.MinterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tlsCfg = &tls.Config{GetCertificate: m.GetCertificate}
		e.pool = ca.CertPool()
		file := filepath.Join(t.TempDir(), "upstream.pem")
		os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw}), 0o644)
		cfg.MITM.UpstreamCA = file
	}
	e.origin = startOriginTLS(t, "127.0.0.1", tlsCfg, testRobots, 0)
	e.dest = netip.MustParseAddrPort(e.origin.Listener.Addr().String())
	e.audit = filepath.Join(t.TempDir(), "audit.log")
	cfg.Log.Audit = e.audit
	if edit != nil {
		edit(&cfg, int(e.dest.Port()))
	}
	names := mapResolver{"site-a.test": "127.0.0.1", "site-b.test": "127.0.0.3"}
	e.p = startProxyWith(t, cfg, Options{Resolver: names,
		OriginalDst: func(net.Conn) (netip.AddrPort, error) { return e.dest, nil }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go e.p.srv.ServeTransparent(ln)
	t.Cleanup(func() { ln.Close() })
	e.ln = ln.Addr().String()
	return e
}

// get sends one GET with this Host on a new connection to the listener,
// over TLS with this SNI when tlsName is not "".
func (e *transparentEnv) get(t *testing.T, tlsName, host, target string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", e.ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if tlsName != "" {
		pool := e.p.ca.CertPool()
		if e.pool != nil && !e.p.srv.settings().mitmHost(tlsName) {
			pool = e.pool // passed blind: the origin's own certificate
		}
		tc := tls.Client(c, &tls.Config{ServerName: tlsName, RootCAs: pool})
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS handshake with SNI %s: %v\n%s", tlsName, err, e.p.logText())
		}
		c = tc
	}
	raw := &rawConn{Conn: c, r: bufio.NewReader(c)}
	return raw.roundTrip(t, fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host))
}

// Requests redirected to a transparent listener are judged like proxied
// ones, by the name they carry (Host, SNI), which must resolve to where
// the client connected: a forged name gets 409 host-mismatch and never
// reaches the origin.
func TestTransparentRequestsAreJudgedByTheirName(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		e := startTransparent(t, useTLS, nil)
		port := e.dest.Port()
		cases := []struct {
			name, sni, host, target string
			status                  int
			decision                string
		}{
			{"allowed", "site-a.test", fmt.Sprintf("site-a.test:%d", port), "/page", 200, "allow"},
			{"disallowed", "site-a.test", fmt.Sprintf("site-a.test:%d", port), "/private/x", 403, "disallow"},
			{"by address", "", e.dest.String(), "/page2", 200, "allow"},
			{"forged name", "site-b.test", fmt.Sprintf("site-b.test:%d", port), "/forged", 409, "host-mismatch"},
			{"another port", "site-a.test", "site-a.test:1", "/port", 409, "host-mismatch"},
			{"unknown name", "nowhere.test", fmt.Sprintf("nowhere.test:%d", port), "/nowhere", 502, "upstream-error"},
		}
		for _, tc := range cases {
			sni := tc.sni
			if !useTLS {
				sni = ""
			} else if sni == "" {
				continue // Go's client sends no SNI for an address: covered by e2e
			} else if tc.name == "another port" {
				continue // the SNI carries no port; the Host must name the SNI's origin (421)
			}
			t.Run(fmt.Sprintf("tls=%v %s", useTLS, tc.name), func(t *testing.T) {
				resp, body := e.get(t, sni, tc.host, tc.target)
				if resp.StatusCode != tc.status || resp.Header.Get("X-Robotsgate-Decision") != stringOr(tc.decision, "allow") && tc.status != 200 {
					t.Errorf("status %d (%s), want %d %s: %s", resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), tc.status, tc.decision, body)
				}
				if got := e.origin.saw(tc.target); got != (tc.status == 200) {
					t.Errorf("the origin saw %s: %v, want %v", tc.target, got, tc.status == 200)
				}
			})
		}
		for _, r := range readAudit(t, e.audit) {
			if r["via"] != "transparent" {
				t.Errorf("audit record %v: via %v, want transparent", r, r["via"])
			}
		}
	}
}

func stringOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// On one transparent TLS connection every request's Host must name the
// SNI's origin (421 otherwise), as inside a CONNECT tunnel.
func TestTransparentTLSHostMustNameTheSNI(t *testing.T) {
	e := startTransparent(t, true, nil)
	resp, body := e.get(t, "site-a.test", fmt.Sprintf("site-b.test:%d", e.dest.Port()), "/other")
	if resp.StatusCode != http.StatusMisdirectedRequest || e.origin.saw("/other") {
		t.Errorf("status %d, want 421, origin reached %v: %s", resp.StatusCode, e.origin.saw("/other"), body)
	}
}

// mitm.skip_hosts passes a transparent TLS connection blind to its
// destination: the client gets the origin's own certificate, and only the
// host is judged (a CONNECT audited via transparent).
func TestTransparentTLSPassesSkippedHostsBlind(t *testing.T) {
	e := startTransparent(t, true, func(c *config.Config, port int) {
		c.MITM.SkipHosts = []string{"site-a.test"}
		c.Egress.TunnelPorts = []int{port}
	})
	resp, body := e.get(t, "site-a.test", fmt.Sprintf("site-a.test:%d", e.dest.Port()), "/private/blind")
	if resp.StatusCode != 200 || !strings.Contains(body, "target=/private/blind") {
		t.Errorf("status %d, body %q: want the origin's answer (a blind tunnel judges only the host)", resp.StatusCode, body)
	}
	recs := waitAudit(t, e.audit, 1)
	if r := recs[0]; r["method"] != "CONNECT" || r["decision"] != "allow" || r["via"] != "transparent" {
		t.Errorf("audit record %v, want an allowed CONNECT via transparent", r)
	}
}

// A transparent client that does not trust the CA fails the handshake:
// audited as client-tls-failed, with nothing answered.
func TestTransparentTLSFailureIsAudited(t *testing.T) {
	e := startTransparent(t, true, nil)
	c, err := net.Dial("tcp", e.ln)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, &tls.Config{ServerName: "site-a.test"}) // system roots only
	if tc.Handshake() == nil {
		t.Fatal("the handshake succeeded without trusting the CA")
	}
	r := waitAudit(t, e.audit, 1)[0]
	if r["decision"] != "client-tls-failed" || r["status"] != float64(0) || r["via"] != "transparent" || r["url"] != fmt.Sprintf("site-a.test:%d", e.dest.Port()) {
		t.Errorf("audit record %v", r)
	}
}

// multiResolver resolves every name to its addresses, in order.
type multiResolver map[string][]netip.Addr

func (r multiResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := r[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// A name with several addresses: the request goes to the one the client
// connected to, not to the first the name resolves to.
func TestTransparentRequestsGoToTheOriginalDestination(t *testing.T) {
	first := startOrigin(t, "127.0.0.3", false, testRobots, 0)
	port := first.Listener.Addr().(*net.TCPAddr).Port
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
	if err != nil {
		t.Skipf("port %d is taken on 127.0.0.2: %v", port, err)
	}
	ln.Close()
	second := startOriginTLS(t, fmt.Sprintf("127.0.0.2:%d", port), nil, testRobots, 0)
	dest := netip.MustParseAddrPort(second.Listener.Addr().String())
	names := multiResolver{"site-a.test": {netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.2")}}
	p := startProxyWith(t, testConfig(t, nil), Options{Resolver: names,
		OriginalDst: func(net.Conn) (netip.AddrPort, error) { return dest, nil }})
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.srv.ServeTransparent(tl)
	defer tl.Close()
	e := &transparentEnv{p: p, ln: tl.Addr().String()}
	resp, body := e.get(t, "", fmt.Sprintf("site-a.test:%d", port), "/where")
	if resp.StatusCode != 200 || !second.saw("/where") || first.saw("/where") {
		t.Errorf("status %d (%s): the request reached 127.0.0.2 (the original destination): %v, 127.0.0.3: %v",
			resp.StatusCode, body, second.saw("/where"), first.saw("/where"))
	}
}

// A name with several addresses, the attacker's first: a client that
// connects to the victim's address with the name is judged by the
// victim's robots.txt, fetched from the address it connected to, never by
// the attacker's, which the name reaches first; and the attacker's own
// address keeps its own rules (the cache is by origin and address).
func TestTransparentRobotsTxtComesFromTheAddressConnectedTo(t *testing.T) {
	port := portFreeOnBoth(t, "127.0.0.3", "127.0.0.2")
	attacker := startOriginTLS(t, fmt.Sprintf("127.0.0.3:%d", port), nil, "User-agent: *\nAllow: /\n", 0)
	victim := startOriginTLS(t, fmt.Sprintf("127.0.0.2:%d", port), nil, testRobots, 0) // Disallow: /private
	names := multiResolver{"both.test": {netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.2")}}
	var dest atomic.Pointer[netip.AddrPort]
	p := startProxyWith(t, testConfig(t, nil), Options{Resolver: names,
		OriginalDst: func(net.Conn) (netip.AddrPort, error) { return *dest.Load(), nil }})
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.srv.ServeTransparent(tl)
	defer tl.Close()
	e := &transparentEnv{p: p, ln: tl.Addr().String()}
	host := fmt.Sprintf("both.test:%d", port)
	for _, c := range []struct {
		name   string
		o      *testOrigin
		status int
	}{
		{"the victim's address", victim, http.StatusForbidden},
		{"the attacker's address", attacker, http.StatusOK},
		{"the victim's address again", victim, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			at := netip.MustParseAddrPort(c.o.Listener.Addr().String())
			dest.Store(&at)
			target := "/private/" + strings.ReplaceAll(c.name, " ", "-")
			resp, body := e.get(t, "", host, target)
			if resp.StatusCode != c.status {
				t.Errorf("GET %s at %s: %d %s, want %d", target, at, resp.StatusCode, body, c.status)
			}
			if c.o.saw(target) != (c.status == http.StatusOK) || victim.saw(target) && c.o != victim {
				t.Errorf("the request reached the victim: %v, the attacker: %v", victim.saw(target), attacker.saw(target))
			}
		})
	}
	if n := countTarget(victim, "/robots.txt"); n != 1 {
		t.Errorf("the victim's robots.txt was fetched %d times, want once (then cached by origin and address)", n)
	}
}

func countTarget(o *testOrigin, target string) int {
	n := 0
	for _, s := range o.seen() {
		if s == target {
			n++
		}
	}
	return n
}

// portFreeOnBoth finds a port free on both loopback addresses (a name's
// two servers must share the port its origin names).
func portFreeOnBoth(t *testing.T, a, b string) int {
	t.Helper()
	for range 20 {
		la, err := net.Listen("tcp", a+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := la.Addr().(*net.TCPAddr).Port
		lb, err := net.Listen("tcp", fmt.Sprintf("%s:%d", b, port))
		la.Close()
		if err == nil {
			lb.Close()
			return port
		}
	}
	t.Fatalf("no port free on both %s and %s in 20 tries", a, b)
	return 0
}
