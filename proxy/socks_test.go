package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	xproxy "golang.org/x/net/proxy"

	"github.com/robotsgate/robotsgate/config"
)

// startSOCKS serves the proxy's SOCKS5 listener on a free loopback port.
func startSOCKS(t *testing.T, p *testProxy) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.srv.ServeSOCKS(ln) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeSOCKS: %v", err)
		}
	})
	return ln.Addr().String()
}

// socksClient is an http.Client whose every connection goes through the
// SOCKS5 listener (golang.org/x/net/proxy, which sends domain names as
// they are), trusting the proxy's CA.
func socksClient(t *testing.T, p *testProxy, addr string, auth *xproxy.Auth) *http.Client {
	t.Helper()
	d, err := xproxy.SOCKS5("tcp", addr, auth, &net.Dialer{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     d.(xproxy.ContextDialer).DialContext,
		TLSClientConfig: &tls.Config{RootCAs: p.ca.CertPool()},
	}}
}

// What a client sends through SOCKS5 is judged as inside a CONNECT tunnel:
// plain HTTP and intercepted HTTPS, allowed paths reach the origin,
// disallowed ones are refused and never do, and the audit says "socks".
func TestSOCKSTunnelsAreJudgedLikeCONNECTTunnels(t *testing.T) {
	tlsOrigin := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	plain := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, tlsOrigin.Certificate())
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	c := socksClient(t, p, startSOCKS(t, p), nil)
	cases := []struct {
		name   string
		o      *testOrigin
		target string
		status int
	}{
		{"http allowed", plain, "/page", 200},
		{"http disallowed", plain, "/private/x", 403},
		{"https allowed", tlsOrigin, "/page", 200},
		{"https disallowed", tlsOrigin, "/private/y", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, c, tc.o.URL+tc.target)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if got := tc.o.saw(tc.target); got != (tc.status == 200) {
				t.Errorf("the origin saw %s: %v, want %v", tc.target, got, tc.status == 200)
			}
		})
	}
	recs := waitAudit(t, cfg.Log.Audit, 6) // each request, and the CONNECT each origin's (kept-alive) connection stands for
	for _, r := range recs {
		if r["via"] != "socks" {
			t.Errorf("audit record %v: via %v, want socks", r, r["via"])
		}
	}
}

// SOCKS5 clients of a user authenticate with username/password, checked as
// Proxy-Authorization is: wrong or missing credentials are refused and
// audited.
func TestSOCKSCredentials(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	h, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	cfg.Clients = []config.Client{{User: "alice", PasswordBcrypt: string(h), Mode: config.ModeEnforce}}
	cfg.ClientsDefault = config.ClientsDeny
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	addr := startSOCKS(t, p)
	cases := []struct {
		name     string
		auth     *xproxy.Auth
		ok       bool
		decision string
	}{
		{"right password", &xproxy.Auth{User: "alice", Password: "s3cret"}, true, "allow"},
		{"wrong password", &xproxy.Auth{User: "alice", Password: "guess"}, false, "auth-required"},
		{"no credentials", nil, false, "auth-required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(readAudit(t, cfg.Log.Audit))
			resp, err := socksClient(t, p, addr, tc.auth).Get(o.URL + "/page")
			if resp != nil {
				resp.Body.Close()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("GET through SOCKS5: %v, want success %v", err, tc.ok)
			}
			want := before + 1 // the CONNECT its connection stands for
			if tc.ok {
				want++ // and the request
			}
			// The opening's record is written when the connection ends,
			// before or after the request's: found by its method.
			var opening map[string]any
			for _, r := range waitAudit(t, cfg.Log.Audit, want)[before:] {
				if r["method"] == http.MethodConnect {
					opening = r
				}
			}
			if r := opening; r["decision"] != tc.decision || r["via"] != "socks" {
				t.Fatalf("the opening's audit record %v, want decision %s via socks", r, tc.decision)
			}
			// The opening's status is the refusal's, though the client was
			// told in SOCKS5's words; nothing else was sent.
			wantStatus := float64(http.StatusProxyAuthRequired)
			if tc.ok {
				wantStatus = http.StatusOK
			}
			if r := opening; r["status"] != wantStatus || r["bytes"] != float64(0) {
				t.Errorf("audit record %v, want status %v and 0 bytes", r, wantStatus)
			}
		})
	}
}

// A SOCKS5 client that speaks neither TLS nor HTTP is closed and audited.
func TestSOCKSUnknownProtocolIsClosed(t *testing.T) {
	cfg := testConfig(t, nil)
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	d, _ := xproxy.SOCKS5("tcp", startSOCKS(t, p), nil, &net.Dialer{})
	c, err := d.(xproxy.ContextDialer).DialContext(context.Background(), "tcp", "127.0.0.2:22")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "SSH-2.0-OpenSSH_9.2\r\n")
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("read %d bytes: the connection was not closed", n)
	}
	r := waitAudit(t, cfg.Log.Audit, 1)[0]
	if r["decision"] != "unknown-protocol" || r["via"] != "socks" || r["method"] != "CONNECT" {
		t.Errorf("audit record %v", r)
	}
}

// A proxy URL written https:// works: the proxy port answers TLS with a
// certificate from robotsgate's CA for the proxy's own name. Without a CA
// (mitm.enabled false) the client is told at once: closed, a WARN line
// and a metric.
func TestTLSToTheProxyPort(t *testing.T) {
	tlsOrigin := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	plain := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	t.Run("served with the CA's certificate", func(t *testing.T) {
		p := startProxy(t, testConfig(t, tlsOrigin.Certificate()))
		c := p.client()
		tr := c.Transport.(*http.Transport)
		proxyURL, _ := url.Parse("https://localhost:" + portOf(p.addr))
		tr.Proxy = http.ProxyURL(proxyURL)
		for _, tc := range []struct {
			url    string
			status int
		}{{plain.URL + "/page", 200}, {plain.URL + "/private/x", 403}, {tlsOrigin.URL + "/page", 200}, {tlsOrigin.URL + "/private/x", 403}} {
			if resp, body := get(t, c, tc.url); resp.StatusCode != tc.status {
				t.Errorf("GET %s through https://localhost:PORT: status %d, want %d: %s", tc.url, resp.StatusCode, tc.status, body)
			}
		}
		_, m := adminGet(t, startAdmin(t, p), "/metrics")
		if v := metricValue(m, "robotsgate_proxy_tls_connections_total"); v == "" || v == "0" {
			t.Errorf("robotsgate_proxy_tls_connections_total = %q, want > 0", v)
		}
	})
	t.Run("closed at once without a CA", func(t *testing.T) {
		cfg := testConfig(t, nil)
		cfg.MITM.Enabled = false
		p := startProxy(t, cfg)
		start := time.Now()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", p.addr, &tls.Config{ServerName: "localhost"})
		if err == nil {
			c.Close()
			t.Fatal("the TLS handshake with the proxy port succeeded without a CA")
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the client waited %v to be told", took)
		}
		if !strings.Contains(p.logText(), "use http:// in the proxy URL") {
			t.Errorf("no WARN line saying to use http://:\n%s", p.logText())
		}
		_, m := adminGet(t, startAdmin(t, p), "/metrics")
		if v := metricValue(m, "robotsgate_proxy_tls_refused_total"); v != "1" {
			t.Errorf("robotsgate_proxy_tls_refused_total = %q, want 1", v)
		}
	})
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}
