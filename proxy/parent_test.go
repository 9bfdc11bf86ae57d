package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
)

// The parent proxy (upstream.proxy) is tested against a real Squid, which
// each test starts on 127.0.0.4: an address the tests' egress rules do not
// allow (testConfig allows 127.0.0.1-3), so a parent on a network the guard
// refuses is reached all the same.

const (
	parentUser     = "alice"
	parentPassword = "s3cret-parent-pw" // must never appear in robotsgate's log
)

// squidBinary returns Debian's squid, "" when it is not installed
// (/usr/sbin is not on a non-root user's PATH).
func squidBinary() string {
	if p, err := exec.LookPath("squid"); err == nil {
		return p
	}
	// Where `make deps` also looks: a non-root PATH lacks them.
	for _, dir := range []string{"/usr/local/sbin", "/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, "squid")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// testSquid is a Squid started by a test: an http_port and an https_port
// on 127.0.0.4 that require Basic credentials (parentUser,
// parentPassword), no cache, an access log of "method URL status user"
// lines, names resolved from its own hosts file only.
type testSquid struct {
	addr    string            // http_port
	tlsAddr string            // https_port
	cert    *x509.Certificate // the https_port's (self-signed)
	log     string            // access log path
}

// startSquid starts Squid (skipping the test when it is not installed) and
// stops it, by its pid, when the test ends. hosts maps names to addresses
// for Squid's own lookups.
func startSquid(t *testing.T, hosts map[string]string) *testSquid {
	t.Helper()
	bin := squidBinary()
	if bin == "" {
		t.Skip("squid is not installed (Debian: apt-get install squid; make test installs it): the parent proxy tests need a real Squid")
	}
	// As root, Squid runs as its own user ("proxy" on Debian): its files
	// live in a directory anyone may write (under /tmp, not t.TempDir's
	// 0700 parents).
	dir, err := os.MkdirTemp("", "robotsgate-squid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	sq := &testSquid{log: filepath.Join(dir, "access.log")}
	sq.addr, sq.tlsAddr = freePort(t, "127.0.0.4"), freePort(t, "127.0.0.4")
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	sq.cert = writeSelfSigned(t, certFile, keyFile, "127.0.0.4")
	var hostLines strings.Builder
	for name, ip := range hosts {
		fmt.Fprintf(&hostLines, "%s %s\n", ip, name)
	}
	files := map[string]string{
		"hosts": hostLines.String(),
		// Squid's basic-auth helper protocol: "user password" in, OK or ERR out.
		"auth.sh": fmt.Sprintf("while read -r user pass; do\n  if [ \"$user\" = %q ] && [ \"$pass\" = %q ]; then echo OK; else echo ERR; fi\ndone\n", parentUser, parentPassword),
		"squid.conf": strings.Join([]string{
			"http_port " + sq.addr,
			fmt.Sprintf("https_port %s tls-cert=%s tls-key=%s", sq.tlsAddr, certFile, keyFile),
			"visible_hostname robotsgate-test-parent",
			"pid_filename " + filepath.Join(dir, "squid.pid"),
			"cache_log " + filepath.Join(dir, "cache.log"),
			"coredump_dir " + dir,
			"logformat robotsgate %rm %ru %>Hs %un",
			"access_log stdio:" + sq.log + " robotsgate",
			"cache deny all",
			"hosts_file " + filepath.Join(dir, "hosts"),
			"dns_nameservers 127.0.0.1", // names not in hosts fail here, not on the network
			"netdb_filename none",
			"pinger_enable off",
			"shutdown_lifetime 0 seconds",
			"auth_param basic program /bin/sh " + filepath.Join(dir, "auth.sh"),
			"auth_param basic children 1 startup=1 idle=1",
			"auth_param basic realm robotsgate-test-parent",
			"acl loopback src 127.0.0.0/8",
			"acl authenticated proxy_auth REQUIRED",
			"http_access allow loopback authenticated",
			"http_access deny all",
		}, "\n") + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := os.Create(filepath.Join(dir, "squid.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(bin, "-N", "-f", filepath.Join(dir, "squid.conf"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting squid: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	diagnostics := func() string {
		var b strings.Builder
		for _, name := range []string{"squid.out", "cache.log"} {
			data, _ := os.ReadFile(filepath.Join(dir, name))
			fmt.Fprintf(&b, "--- %s\n%s", name, data)
		}
		return b.String()
	}
	// Squid is ready once both ports accept: a bounded poll, there is no
	// other signal.
	for _, addr := range []string{sq.addr, sq.tlsAddr} {
		for deadline := time.Now().Add(20 * time.Second); ; {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("squid exited at start:\n%s", diagnostics())
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("squid does not accept on %s:\n%s", addr, diagnostics())
			}
		}
	}
	return sq
}

// freePort returns a host:port on ip that nothing listens on.
func freePort(t *testing.T, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// writeSelfSigned writes a self-signed ECDSA certificate for ip and its
// key, readable by Squid's user.
func writeSelfSigned(t *testing.T, certFile, keyFile, ip string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "robotsgate test parent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(ip)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o644)
	cert, _ := x509.ParseCertificate(der)
	return cert
}

// lines returns Squid's access log lines from the from-th on, but those of
// startSquid's probes (connections closed before sending anything).
func (sq *testSquid) lines(from int) []string {
	data, _ := os.ReadFile(sq.log)
	var all []string
	for l := range strings.Lines(string(data)) {
		if !strings.Contains(l, "error:transaction-end-before-headers") {
			all = append(all, strings.TrimSuffix(l, "\n"))
		}
	}
	if from >= len(all) {
		return nil
	}
	return all[from:]
}

// waitFor waits (a bounded poll of the access log: Squid writes a line
// when a transaction ends, a CONNECT when its tunnel closes) until every
// line in want appears n times among the lines from the from-th on, and
// returns those lines.
func (sq *testSquid) waitFor(t *testing.T, from int, want map[string]int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := sq.lines(from)
		missing := ""
		for line, n := range want {
			if c := count(got, line); c < n {
				missing += fmt.Sprintf("\n  %q: %d of %d", line, c, n)
			}
		}
		if missing == "" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("Squid's access log lacks:%s\nit has:\n%s", missing, strings.Join(got, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func count(lines []string, line string) int {
	n := 0
	for _, l := range lines {
		if l == line {
			n++
		}
	}
	return n
}

// upstreamCAs writes the PEM file of mitm.upstream_ca: the certificates
// robotsgate trusts upstream (origins and the https parent).
func upstreamCAs(t *testing.T, certs ...*x509.Certificate) string {
	t.Helper()
	var b []byte
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	file := filepath.Join(t.TempDir(), "upstream.pem")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// dialRecorder dials for real and records every address robotsgate
// connects to (Options.Dial: direct dials and the parent's alike).
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialRecorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
}

func (d *dialRecorder) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Compact(slices.Sorted(slices.Values(d.addrs)))
}

// mapResolver resolves the names it knows, and no other.
type mapResolver map[string]string

func (r mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ip, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(ip)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// parentURL is the upstream.proxy value for sq's port of that scheme.
func (sq *testSquid) parentURL(scheme, password string) string {
	addr := sq.addr
	if scheme == "https" {
		addr = sq.tlsAddr
	}
	return (&url.URL{Scheme: scheme, User: url.UserPassword(parentUser, password), Host: addr}).String()
}

// stop shuts p down, closing its connections to the parent: Squid logs a
// CONNECT only when its tunnel closes.
func (p *testProxy) stop(t *testing.T) {
	t.Helper()
	if err := p.srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func hostOf(rawURL string) string {
	u, _ := url.Parse(rawURL)
	return u.Host
}

// rawTarget is a request-target that Go's URL would re-encode: the proxy
// keeps it byte for byte (prepareUpstream), and must still send it to a
// parent in absolute form.
const rawTarget = `/raw"target|kept`

// TestParentProxySquid: with upstream.proxy set to a real Squid (http://
// and https://), every request and robots.txt fetch goes through it, in
// absolute form for http:// and by CONNECT for https:// (robotsgate
// connects to nothing else: the recorded dials), with Squid's required
// credentials; decisions are the same as without a parent (the "direct"
// row runs the same table); refused paths and egress-denied destinations
// never reach Squid, nor the origin; upstream.no_proxy hosts are reached
// directly; the password never appears in robotsgate's log.
//
// One Squid serves the subtests (stopping one takes Squid 2 s).
func TestParentProxySquid(t *testing.T) {
	sq := startSquid(t, map[string]string{"allowed.test": "127.0.0.2", "private.test": "127.0.0.2", "redirecting.test": "127.0.0.2"})
	t.Run("requests", func(t *testing.T) { testParentRequests(t, sq) })
	t.Run("blind tunnel", func(t *testing.T) { testParentBlindTunnel(t, sq) })
	t.Run("names", func(t *testing.T) { testParentNames(t, sq) })
	t.Run("credentials refused", func(t *testing.T) { testParentRefusesCredentials(t, sq) })
}

// testParentRequests: the requests and robots.txt fetches, direct and
// through the http:// and https:// parent.
func testParentRequests(t *testing.T, sq *testSquid) {
	for _, mode := range []struct{ name, parent string }{
		{"direct", ""},
		{"http parent", sq.parentURL("http", parentPassword)},
		{"https parent", sq.parentURL("https", parentPassword)},
	} {
		t.Run(mode.name, func(t *testing.T) {
			from := len(sq.lines(0))
			o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
			tlsOrigin := startOrigin(t, "127.0.0.1", true, testRobots, 0)
			direct := startOrigin(t, "127.0.0.3", false, testRobots, 0)
			cfg := testConfig(t, nil)
			cfg.MITM.UpstreamCA = upstreamCAs(t, tlsOrigin.Certificate(), sq.cert)
			cfg.Upstream = config.Upstream{Proxy: mode.parent, NoProxy: []string{"127.0.0.3"}}
			rec := &dialRecorder{}
			p := startProxyWith(t, cfg, Options{Dial: rec.dial})
			c := p.client()
			for _, tc := range []struct {
				url      string
				status   int
				decision string // "" when forwarded
				origin   *testOrigin
			}{
				{o.URL + "/public", 200, "", o},
				{o.URL + "/private/x", 403, "disallow", o},
				{o.URL + rawTarget, 200, "", o},
				{tlsOrigin.URL + "/public", 200, "", tlsOrigin},
				{tlsOrigin.URL + "/private/x", 403, "disallow", tlsOrigin},
				{direct.URL + "/public", 200, "", direct},
				{direct.URL + "/private/x", 403, "disallow", direct},
				{"http://127.0.0.5:9/public", 403, "egress-denied", nil},
			} {
				var resp *http.Response
				var body string
				if strings.HasSuffix(tc.url, rawTarget) { // sent as is, not as Go's client would encode it
					resp, body = dialProxy(t, p).roundTrip(t, "GET "+tc.url+" HTTP/1.1\r\nHost: "+hostOf(o.URL)+"\r\n\r\n")
				} else {
					resp, body = get(t, c, tc.url)
				}
				if resp.StatusCode != tc.status || resp.Header.Get("X-Robotsgate-Decision") != tc.decision {
					t.Errorf("%s: %d %q, want %d %q\n%s", tc.url, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), tc.status, tc.decision, body)
				}
				if tc.origin != nil {
					target := strings.TrimPrefix(tc.url, tc.origin.URL)
					if reached := tc.origin.saw(target); reached != (tc.decision == "") {
						t.Errorf("%s: the origin received it: %v", tc.url, reached)
					}
				}
			}
			p.stop(t)
			if strings.Contains(p.logText(), parentPassword) {
				t.Errorf("the log shows the parent's password:\n%s", p.logText())
			}
			dialled := rec.dialled()
			if mode.parent == "" {
				if got := sq.lines(from); len(got) != 0 {
					t.Errorf("without a parent, Squid saw %q", got)
				}
				return
			}
			// Every connection robotsgate made went to Squid, but the
			// no_proxy origin's.
			parentAddr := hostOf(mode.parent)
			if want := []string{hostOf(direct.URL), parentAddr}; !slices.Equal(dialled, want) {
				t.Errorf("robotsgate dialled %q, want only %q", dialled, want)
			}
			host, tlsHost := hostOf(o.URL), hostOf(tlsOrigin.URL)
			got := sq.waitFor(t, from, map[string]int{
				"GET http://" + host + "/robots.txt 200 " + parentUser:  1,
				"GET http://" + host + "/public 200 " + parentUser:      1,
				"GET http://" + host + rawTarget + " 200 " + parentUser: 1,
				// one tunnel for the robots.txt fetch, one for the requests
				"CONNECT " + tlsHost + " 200 " + parentUser: 2,
			})
			for _, l := range got {
				if strings.Contains(l, "/private") || strings.Contains(l, "127.0.0.3") || strings.Contains(l, "127.0.0.5") {
					t.Errorf("Squid saw %q: refused, egress-denied or no_proxy", l)
				}
			}
		})
	}
}

// testParentBlindTunnel: a CONNECT robotsgate does not intercept
// (mitm.skip_hosts) is opened through Squid's CONNECT; a host refused at
// CONNECT (robots.txt disallows everything) never reaches Squid, though
// its robots.txt fetch does.
func testParentBlindTunnel(t *testing.T, sq *testSquid) {
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme+" parent", func(t *testing.T) {
			from := len(sq.lines(0))
			open := startOrigin(t, "127.0.0.1", true, testRobots, 0)
			closed := startOrigin(t, "127.0.0.1", true, "User-agent: *\nDisallow: /\n", 0)
			cfg := testConfig(t, nil)
			cfg.MITM.UpstreamCA = upstreamCAs(t, open.Certificate(), sq.cert)
			cfg.MITM.SkipHosts = []string{"127.0.0.1"}
			cfg.Egress.TunnelPorts = []int{open.Listener.Addr().(*net.TCPAddr).Port, closed.Listener.Addr().(*net.TCPAddr).Port}
			cfg.Upstream.Proxy = sq.parentURL(scheme, parentPassword)
			rec := &dialRecorder{}
			p := startProxyWith(t, cfg, Options{Dial: rec.dial})

			roots := x509.NewCertPool()
			roots.AddCert(open.Certificate()) // a blind tunnel: the client talks TLS to the origin
			proxyURL, _ := url.Parse("http://" + p.addr)
			client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: roots}}}
			resp, body := get(t, client, open.URL+"/public")
			if resp.StatusCode != 200 || body != "target=/public" {
				t.Errorf("through the blind tunnel: %d %q", resp.StatusCode, body)
			}
			client.CloseIdleConnections()
			closedHost := hostOf(closed.URL)
			resp, _ = dialProxy(t, p).roundTrip(t, "CONNECT "+closedHost+" HTTP/1.1\r\nHost: "+closedHost+"\r\n\r\n")
			checkRefusal(t, resp, 403, "disallow", "http_request_denied")
			p.stop(t)

			if want := []string{hostOf(cfg.Upstream.Proxy)}; !slices.Equal(rec.dialled(), want) {
				t.Errorf("robotsgate dialled %q, want only the parent %q", rec.dialled(), want)
			}
			got := sq.waitFor(t, from, map[string]int{
				"CONNECT " + hostOf(open.URL) + " 200 " + parentUser: 2, // robots.txt fetch, then the tunnel
				"CONNECT " + closedHost + " 200 " + parentUser:       1, // robots.txt fetch only
			})
			if n := count(got, "CONNECT "+closedHost+" 200 "+parentUser); n != 1 {
				t.Errorf("Squid saw %d CONNECTs to the refused host, want 1 (its robots.txt):\n%s", n, strings.Join(got, "\n"))
			}
		})
	}
}

// testParentNames: the egress guard checks names and the
// addresses they resolve to here before anything goes to the parent: a
// name resolving to a forbidden address is refused even though Squid
// (which resolves names itself, from its hosts file here) would reach an
// allowed one, and so is a robots.txt redirect to it.
func testParentNames(t *testing.T, sq *testSquid) {
	from := len(sq.lines(0))
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	port := o.Listener.Addr().(*net.TCPAddr).Port
	inner := o.Config.Handler
	o.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "redirecting.test") && r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, fmt.Sprintf("http://private.test:%d/robots.txt", port), http.StatusMovedPermanently)
			return
		}
		inner.ServeHTTP(w, r)
	})
	cfg := testConfig(t, nil)
	cfg.Upstream.Proxy = sq.parentURL("http", parentPassword)
	p := startProxyWith(t, cfg, Options{Resolver: mapResolver{
		"allowed.test": "127.0.0.2", "private.test": "10.0.0.1", "redirecting.test": "127.0.0.2",
	}})
	c := p.client()
	for _, tc := range []struct {
		host, path string
		status     int
		decision   string
	}{
		{"allowed.test", "/public", 200, ""},
		{"private.test", "/from-private", 403, "egress-denied"},
		{"redirecting.test", "/from-redirecting", 503, "unreachable"},
	} {
		resp, body := get(t, c, fmt.Sprintf("http://%s:%d%s", tc.host, port, tc.path))
		if resp.StatusCode != tc.status || resp.Header.Get("X-Robotsgate-Decision") != tc.decision {
			t.Errorf("%s: %d %q, want %d %q\n%s", tc.host, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), tc.status, tc.decision, body)
		}
	}
	got := sq.waitFor(t, from, map[string]int{
		fmt.Sprintf("GET http://allowed.test:%d/public 200 %s", port, parentUser):         1,
		fmt.Sprintf("GET http://redirecting.test:%d/robots.txt 301 %s", port, parentUser): 1,
	})
	for _, l := range got {
		if strings.Contains(l, "private.test") || strings.Contains(l, "/from-") {
			t.Errorf("Squid saw %q", l)
		}
	}
	if o.saw("/from-private") || o.saw("/from-redirecting") {
		t.Errorf("the origin saw %q", o.seen())
	}
}

// testParentRefusesCredentials: when the parent refuses
// robotsgate's credentials (407), requests get a 502 that says so, with a
// fixed body, never the parent's 407 (which would ask the client for
// credentials it has not got), and robots.txt is unreachable (503), never
// "unavailable" (which would allow everything).
func testParentRefusesCredentials(t *testing.T, sq *testSquid) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	tlsOrigin := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	ignored := startOrigin(t, "127.0.0.3", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.MITM.UpstreamCA = upstreamCAs(t, tlsOrigin.Certificate())
	cfg.Sites = []config.Site{{Hosts: []string{"127.0.0.3", "127.0.0.1"}, Robots: config.RobotsIgnore}}
	cfg.Upstream.Proxy = sq.parentURL("http", "wrong-password")
	p := startProxy(t, cfg)
	for _, tc := range []struct {
		url         string
		status      int
		decision    string
		proxyStatus string
	}{
		{o.URL + "/public", 503, "unreachable", "proxy_configuration_error"}, // its robots.txt fetch got the 407: robotsgate's configuration is at fault, as for the others
		{ignored.URL + "/public", 502, "upstream-error", "proxy_configuration_error"},
		{tlsOrigin.URL + "/public", 502, "upstream-error", "proxy_configuration_error"},
	} {
		resp, body := get(t, p.client(), tc.url)
		checkRefusal(t, resp, tc.status, tc.decision, tc.proxyStatus)
		if tc.status == 502 && !strings.Contains(body, "The parent proxy refused robotsgate's credentials") {
			t.Errorf("%s: body %q", tc.url, body)
		}
	}
	if len(o.seen())+len(tlsOrigin.seen())+len(ignored.seen()) != 0 {
		t.Errorf("origins saw %q %q %q", o.seen(), tlsOrigin.seen(), ignored.seen())
	}
	if !strings.Contains(p.logText(), "upstream failed through the parent proxy") {
		t.Errorf("the log does not say the parent failed:\n%s", p.logText())
	}
}

// TestDeadParentProxyIs502: a parent that cannot be reached gives 502 with
// a fixed body (nothing of the dial error: no address, no port, no
// "proxyconnect") for http:// and intercepted https:// requests and blind
// tunnels, 503 unreachable where robots.txt must be fetched, and the cause
// in the log with the parent's URL redacted.
func TestDeadParentProxyIs502(t *testing.T) {
	dead := freePort(t, "127.0.0.4") // nothing listens there
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	tlsOrigin := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	cfg := testConfig(t, tlsOrigin.Certificate())
	cfg.Sites = []config.Site{{Hosts: []string{"127.0.0.1", "blind.test"}, Robots: config.RobotsIgnore}}
	cfg.MITM.SkipHosts = []string{"blind.test"}
	cfg.Upstream.Proxy = "http://" + parentUser + ":" + parentPassword + "@" + dead
	p := startProxyWith(t, cfg, Options{Resolver: mapResolver{"blind.test": "127.0.0.1"}})
	for _, tc := range []struct {
		name        string
		send        func() (*http.Response, string)
		status      int
		decision    string
		proxyStatus string
	}{
		{"http, robots.txt needed", func() (*http.Response, string) { return get(t, p.client(), o.URL+"/public") }, 503, "unreachable", "connection_refused"},
		{"http", func() (*http.Response, string) { return get(t, p.client(), "http://127.0.0.1:9/public") }, 502, "upstream-error", "connection_refused"},
		{"https intercepted", func() (*http.Response, string) { return get(t, p.client(), tlsOrigin.URL+"/public") }, 502, "upstream-error", "connection_refused"},
		{"blind tunnel", func() (*http.Response, string) {
			return dialProxy(t, p).roundTrip(t, "CONNECT blind.test:443 HTTP/1.1\r\nHost: blind.test:443\r\n\r\n")
		}, 502, "upstream-error", "connection_refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := tc.send()
			checkRefusal(t, resp, tc.status, tc.decision, tc.proxyStatus)
			if tc.status == 502 && body != "502 Bad Gateway: The origin could not be reached through the parent proxy.\n" {
				t.Errorf("body %q", body)
			}
			for _, leak := range []string{"127.0.0.4", dead, "dial", "proxyconnect", "connection refused", parentPassword} {
				if strings.Contains(body, leak) || strings.Contains(resp.Header.Get("Proxy-Status"), leak) {
					t.Errorf("the response leaks %q: %v\n%s", leak, resp.Header, body)
				}
			}
		})
	}
	logs := p.logText()
	if !strings.Contains(logs, "upstream failed through the parent proxy") || !strings.Contains(logs, "connection refused") ||
		!strings.Contains(logs, parentUser+":xxxxx@"+dead) {
		t.Errorf("the log lacks the parent's failure, its cause or its redacted URL:\n%s", logs)
	}
	if strings.Contains(logs, parentPassword) {
		t.Errorf("the log shows the parent's password:\n%s", logs)
	}
}

// TestBlindTunnelDialFailureIs502WithoutErrorText: a blind tunnel whose
// destination cannot be reached (no parent here) is answered like a failed
// request, not with goproxy's 502 carrying the dial error's text.
func TestBlindTunnelDialFailureIs502WithoutErrorText(t *testing.T) {
	closed := freePort(t, "127.0.0.1")
	_, port, _ := net.SplitHostPort(closed)
	cfg := testConfig(t, nil)
	cfg.Sites = []config.Site{{Hosts: []string{"127.0.0.1"}, Robots: config.RobotsIgnore}}
	cfg.MITM.SkipHosts = []string{"127.0.0.1"}
	cfg.Egress.TunnelPorts = []int{atoi(t, port)}
	p := startProxy(t, cfg)
	resp, body := dialProxy(t, p).roundTrip(t, "CONNECT "+closed+" HTTP/1.1\r\nHost: "+closed+"\r\n\r\n")
	checkRefusal(t, resp, http.StatusBadGateway, "upstream-error", "connection_refused")
	if body != "502 Bad Gateway: The origin could not be reached.\n" {
		t.Errorf("body %q", body)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
