//go:build linux

package e2e

// Transparent interception, end to end: the real binary in a private
// network namespace whose nftables rules REDIRECT ports 80 and 443 to its
// transparent listeners (its own connections, marked, left alone), and
// origins of this test process on documentation addresses inside it,
// named in the namespace's /etc/hosts. The clients have no proxy setting
// at all: curl, Node's built-in fetch, Python's urllib.

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/certs"
	"github.com/robotsgate/robotsgate/internal/netnstest"
)

// The namespace's sites: a name, its address, and origins on ports 80
// (plain) and 443 (TLS, certificates for the name and the address).
var transparentSites = []struct{ name, ip string }{
	{"site-a.test", "203.0.113.10"},
	{"site-b.test", "203.0.113.11"},
	{"paced.test", "203.0.113.12"},
}

// transparentMark is robotsgate's socket mark in these tests: the
// redirecting rule returns early for it.
const transparentMark = 0x2a

// sameHostRules redirect the namespace's connections to the sites to the
// transparent listeners, except robotsgate's own (marked): clients and
// robotsgate on one host.
const sameHostRules = `table inet robotsgate_e2e {
  chain output {
    type nat hook output priority -100; policy accept;
    meta mark 0x2a return
    ip daddr 203.0.113.0/24 tcp dport 80 redirect to :8081
    ip daddr 203.0.113.0/24 tcp dport 443 redirect to :8443
  }
}`

// gatewayRules redirect what arrives from the clients' link (%s) to the
// transparent listeners: robotsgate on a gateway, as docs/operations.md
// gives them.
const gatewayRules = `table inet robotsgate_e2e {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    iifname "%[1]s" tcp dport 80 redirect to :8081
    iifname "%[1]s" tcp dport 443 redirect to :8443
  }
}`

// The gateway test's link: the clients' namespace and the gateway.
const gatewayClientAddr, gatewayAddr = "10.99.0.2", "10.99.0.1"

// nsSite is one site's origins.
type nsSite struct {
	name, ip    string
	http, https *clientOrigin
}

// transparentEnv is one test's namespace, robotsgate in it and its sites,
// and the namespace its clients run in (the same one, or behind a
// gateway).
type transparentEnv struct {
	*clientEnv // plain, tls: site-a's origins; paced: paced.test's HTTPS origin
	ns         *netnstest.NS
	clients    *netnstest.NS
	sites      map[string]*nsSite
}

// startTransparentEnv starts robotsgate and the sites in a namespace,
// with clients in the same one (gateway false) or in another whose
// traffic is routed through it.
func startTransparentEnv(t *testing.T, gateway bool) *transparentEnv {
	t.Helper()
	var ips, hosts []string
	for _, s := range transparentSites {
		ips = append(ips, s.ip)
		hosts = append(hosts, s.ip+" "+s.name)
	}
	ns := netnstest.New(t, ips...)
	clients := ns
	if gateway {
		clients = netnstest.New(t)
		gw, _ := ns.Link(t, gatewayAddr+"/24", clients, gatewayClientAddr+"/24")
		clients.Route(t, "203.0.113.0/24", "via", gatewayAddr)
		ns.Nft(t, fmt.Sprintf(gatewayRules, gw))
	} else {
		ns.Nft(t, sameHostRules)
	}
	ns.Hosts(t, hosts...) // robotsgate resolves the names too
	if gateway {
		clients.Hosts(t, hosts...)
	}
	dir := t.TempDir()
	upstream := filepath.Join(dir, "upstream.pem")
	originTLS := originCertificates(t, upstream)
	e := &transparentEnv{clientEnv: &clientEnv{dir: dir, caFile: filepath.Join(dir, "certs", "ca.pem")}, ns: ns, clients: clients, sites: map[string]*nsSite{}}
	for _, s := range transparentSites {
		robots, handshake := clientRobotsTxt, time.Duration(0)
		if s.name == "paced.test" {
			robots, handshake = fmt.Sprintf("%sCrawl-delay: %g\n", clientRobotsTxt, crawlDelay.Seconds()), handshakeLatency
		}
		site := &nsSite{name: s.name, ip: s.ip,
			http:  startClientOriginOn(t, ns.Listen(t, s.ip+":80"), nil, robots, 0),
			https: startClientOriginOn(t, ns.Listen(t, s.ip+":443"), originTLS, robots, handshake)}
		site.http.URL, site.https.URL = "http://"+s.name, "https://"+s.name
		e.sites[s.name] = site
	}
	e.plain, e.tls, e.paced = e.sites["site-a.test"].http, e.sites["site-a.test"].https, e.sites["paced.test"].https
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, transparentConfig(dir, upstream, gateway))
	p, err := tryStartServeIn(t, ns.Prefix(), dir, "-config", cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	p.waitLog("transparent TLS on", 1)
	return e
}

// in is the prefix that runs a client (in the clients' namespace).
func (e *transparentEnv) in() []string { return e.clients.Prefix() }

// originCertificates is the sites' TLS configuration: certificates from a
// CA of their own (written to caFile for mitm.upstream_ca) for the name in
// the SNI, or the address connected to when there is none.
func originCertificates(t *testing.T, caFile string) *tls.Config {
	t.Helper()
	ca, err := certs.GenerateCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m, err := certs.NewMinter(ca, certs.MinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, caFile, string(ca.CertPEM()))
	// A configuration per handshake: httptest gives the server's own one a
	// certificate, which crypto/tls would send to clients without SNI.
	return &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		name := hello.ServerName
		if name == "" {
			name, _, _ = net.SplitHostPort(hello.Conn.LocalAddr().String())
		}
		cert, err := m.Certificate(name)
		if err != nil {
			return nil, err
		}
		return &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"h2", "http/1.1"}}, nil
	}}
}

// transparentConfig: the proxy port, the transparent listeners the rules
// redirect to (on a gateway, on every address: REDIRECT sends packets to
// the address of the interface they came in on), robotsgate's own
// connections marked, the sites' network allowed, the audit log on stdout.
func transparentConfig(dir, upstreamCA string, gateway bool) string {
	listen := "127.0.0.1"
	if gateway {
		listen = "0.0.0.0"
	}
	return fmt.Sprintf(`# written by the transparent tests
listen: 127.0.0.1:8080
admin_listen: ""
robots:
  fetch_user_agent: %q
  fetch_timeout: 5s
egress:
  allow_networks: [203.0.113.0/24]
mitm:
  ca_cert: %q
  ca_key: %q
  upstream_ca: %q
transparent:
  http_listen: %[5]s:8081
  tls_listen: %[5]s:8443
  mark: %#[6]x
log:
  audit: "-"
`, e2eFetchUA, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), upstreamCA, listen, transparentMark)
}

// script runs a client script inside the namespace.
func (e *transparentEnv) script(t *testing.T, env []string, interpreter, name string, urls ...string) map[string]clientResult {
	t.Helper()
	args := append(append(e.in()[1:], interpreter, clientScript(t, name)), urls...)
	return runScript(t, e.clientEnv, env, e.in()[0], args...)
}

// Clients with no proxy setting, redirected by the kernel: allowed bodies
// arrive byte for byte, /private is refused and never reaches the origin,
// over HTTP and HTTPS, by name and by address.
func TestTransparentClientsWithoutProxySettings(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	e := startTransparentEnv(t, false)
	site := e.sites["site-a.test"]
	t.Run("curl", func(t *testing.T) {
		for _, o := range []*clientOrigin{site.http, site.https} {
			for _, target := range []string{"/data/curl", "/private/curl"} {
				r := curlIn(t, e.in(), clientVars(), "--cacert", e.caFile, o.URL+target)
				if r.code != 0 {
					t.Fatalf("curl %s: exit %d: %s\n%s", o.URL+target, r.code, r.stderr, e.log())
				}
				if strings.HasPrefix(target, "/data/") {
					e.wantAllowed(t, "curl", o, target, r.status, []byte(r.body))
				} else {
					e.wantRefused(t, "curl", o, target, r.status, r.body)
				}
			}
		}
	})
	t.Run("curl by address", func(t *testing.T) {
		for _, scheme := range []string{"http", "https"} {
			o := map[string]*clientOrigin{"http": site.http, "https": site.https}[scheme]
			u := scheme + "://" + site.ip + "/data/curl-ip"
			r := curlIn(t, e.in(), clientVars(), "--cacert", e.caFile, u)
			if r.code != 0 || r.status != 200 || !bytes.Equal([]byte(r.body), clientBody) {
				t.Errorf("curl %s: exit %d, status %d, %d bytes: %s\n%s", u, r.code, r.status, len(r.body), r.stderr, e.log())
			}
			if !o.saw("/data/curl-ip") {
				t.Errorf("curl %s: the origin never received it", u)
			}
			e.waitAudit(t, u, "allow", http.StatusOK)
		}
	})
	t.Run("node fetch", func(t *testing.T) {
		needTool(t, "node")
		e.wantScriptJudged(t, clientVars("NODE_EXTRA_CA_CERTS="+e.caFile), "node", "node_fetch.js", "node-fetch")
	})
	t.Run("python urllib", func(t *testing.T) {
		needPython(t, "urllib.request")
		e.wantScriptJudged(t, clientVars("SSL_CERT_FILE="+e.caFile), systemPython, "py_urllib.py", "urllib")
	})
}

// wantScriptJudged runs a client script for an allowed and a refused path
// on both of site-a's origins.
func (e *transparentEnv) wantScriptJudged(t *testing.T, env []string, interpreter, script, id string) {
	t.Helper()
	site := e.sites["site-a.test"]
	var urls []string
	for _, o := range []*clientOrigin{site.http, site.https} {
		urls = append(urls, o.URL+"/data/"+id, o.URL+"/private/"+id)
	}
	res := e.script(t, env, interpreter, script, urls...)
	for _, o := range []*clientOrigin{site.http, site.https} {
		r := result(t, res, o.URL+"/data/"+id)
		if r.Error != "" {
			t.Fatalf("%s %s: %s\n%s", id, o.URL, r.Error, e.log())
		}
		e.wantAllowed(t, id, o, "/data/"+id, r.Status, r.body())
		r = result(t, res, o.URL+"/private/"+id)
		e.wantRefused(t, id, o, "/private/"+id, r.Status, string(r.body()))
	}
}

// A forged Host or SNI (a name that does not resolve to the address the
// client connected to) is refused with 409 host-mismatch and reaches no
// origin.
func TestTransparentForgedHostAndSNIAreRefused(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	e := startTransparentEnv(t, false)
	a, b := e.sites["site-a.test"], e.sites["site-b.test"]
	cases := []struct {
		name, url, target string
		args              []string
	}{
		{"Host", "http://site-b.test/forged-host", "/forged-host", []string{"-H", "Host: site-b.test", "http://site-a.test/forged-host"}},
		{"SNI", "https://site-b.test/forged-sni", "/forged-sni", []string{"--resolve", "site-b.test:443:" + a.ip, "https://site-b.test/forged-sni"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := curlIn(t, e.in(), clientVars(), append([]string{"--cacert", e.caFile}, c.args...)...)
			if r.code != 0 || r.status != http.StatusConflict || r.header.Get("X-Robotsgate-Decision") != "host-mismatch" {
				t.Errorf("curl: exit %d, status %d, decision %q, want 409 host-mismatch; %s %s\n%s",
					r.code, r.status, r.header.Get("X-Robotsgate-Decision"), r.stderr, r.body, e.log())
			}
			for _, o := range []*clientOrigin{a.http, a.https, b.http, b.https} {
				if o.saw(c.target) {
					t.Errorf("%s received %s", o.URL, c.target)
				}
			}
			e.waitAudit(t, c.url, "host-mismatch", http.StatusConflict)
		})
	}
}

// Crawl-delay holds at the origin for redirected requests.
func TestTransparentCrawlDelayHoldsAtTheOrigin(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	e := startTransparentEnv(t, false)
	const n = 3
	var args []string
	for i := range n {
		args = append(args, "-o", os.DevNull, fmt.Sprintf("https://paced.test/data/paced-%d", i))
	}
	r := curlIn(t, e.in(), clientVars(), append([]string{"--cacert", e.caFile}, args...)...)
	if r.code != 0 {
		t.Fatalf("curl: exit %d: %s\n%s", r.code, r.stderr, e.log())
	}
	e.wantPaced(t, "curl", n)
}

// A client that does not trust robotsgate's CA is recorded with the reason
// it gives: curl and Python (OpenSSL 3, TLS 1.3) send an unencrypted
// unknown_ca alert, Node.js hangs up after the certificate.
func TestTransparentUntrustedCAReasonPerClient(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	e := startTransparentEnv(t, false)
	cases := []struct {
		client string
		run    func(t *testing.T)
		note   string
	}{
		{"curl", func(t *testing.T) { curlIn(t, e.in(), clientVars(), "https://site-a.test/untrusted") },
			"unknown certificate authority"},
		{"python urllib", func(t *testing.T) {
			needPython(t, "urllib.request")
			e.script(t, clientVars(), systemPython, "py_urllib.py", "https://site-a.test/untrusted")
		}, "unknown certificate authority"},
		{"node fetch", func(t *testing.T) {
			needTool(t, "node")
			e.script(t, clientVars(), "node", "node_fetch.js", "https://site-a.test/untrusted")
		}, "without a TLS alert"},
	}
	for i, c := range cases {
		t.Run(c.client, func(t *testing.T) {
			c.run(t)
			want := 0 // this client's line, after those of the clients before it that say the same
			for _, earlier := range cases[:i+1] {
				if earlier.note == c.note {
					want++
				}
			}
			if !e.waitAuditCount(func(a auditEntry) bool {
				return a.Decision == "client-tls-failed" && strings.Contains(a.Note, c.note)
			}, want) {
				t.Errorf("%s: no client-tls-failed audit line saying %q; %s", c.client, c.note, e.log())
			}
		})
	}
}

// On a gateway, the clients' traffic routed through robotsgate's host is
// redirected as it arrives (prerouting, the rules of docs/operations.md):
// judged the same way, and audited with the client's own address.
func TestTransparentGatewayJudgesRoutedClients(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	e := startTransparentEnv(t, true)
	site := e.sites["site-a.test"]
	for _, o := range []*clientOrigin{site.http, site.https} {
		for _, target := range []string{"/data/gateway", "/private/gateway"} {
			r := curlIn(t, e.in(), clientVars(), "--cacert", e.caFile, o.URL+target)
			if r.code != 0 {
				t.Fatalf("curl %s: exit %d: %s\n%s", o.URL+target, r.code, r.stderr, e.log())
			}
			if strings.HasPrefix(target, "/data/") {
				e.wantAllowed(t, "curl", o, target, r.status, []byte(r.body))
			} else {
				e.wantRefused(t, "curl", o, target, r.status, r.body)
			}
		}
		if _, ok := e.waitAuditLine(func(a auditEntry) bool {
			return a.URL == o.URL+"/data/gateway" && strings.HasPrefix(a.Client, gatewayClientAddr+":")
		}); !ok {
			t.Errorf("no audit line of %s/data/gateway from the client's address %s; %s", o.URL, gatewayClientAddr, e.log())
		}
	}
}
