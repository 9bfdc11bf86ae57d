package proxy

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/robots"
)

func TestHTTPAllowedAndDisallowed(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	c := p.client()

	resp, body := get(t, c, o.URL+"/public/page?x=1")
	if resp.StatusCode != 200 || body != "target=/public/page?x=1" || resp.Header.Get("X-Origin") != "yes" {
		t.Fatalf("allowed: %d %q", resp.StatusCode, body)
	}

	resp, body = get(t, c, o.URL+"/private/x", "User-Agent", "Mozilla/5.0 (compatible; TestBot/1.0)")
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")
	for _, want := range []string{o.URL + "/private/x", "TestBot/1.0", "User-agent: *", "Disallow: /private (line 2)", o.URL + "/robots.txt"} {
		if !strings.Contains(body, want) {
			t.Errorf("403 body lacks %q:\n%s", want, body)
		}
	}
	if o.saw("/private/x") {
		t.Error("the origin received the disallowed request")
	}

	resp, _ = get(t, c, o.URL+"/private/ok")
	if resp.StatusCode != 200 {
		t.Errorf("longer allow rule: %d", resp.StatusCode)
	}
	resp, _ = get(t, c, o.URL+"/foo-only", "User-Agent", "FooBot/2")
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")
	resp, _ = get(t, c, o.URL+"/private/x", "User-Agent", "FooBot/2")
	if resp.StatusCode != 200 {
		t.Errorf("FooBot has its own group, which allows /private: %d", resp.StatusCode)
	}
}

// checkRefusal checks a response robotsgate made: its status, decision,
// the error type of its Proxy-Status (RFC 9209, exactly errorType) and
// Cache-Control: no-store.
func checkRefusal(t *testing.T, resp *http.Response, status int, decision, errorType string) {
	t.Helper()
	if errorType == "" {
		t.Fatal("checkRefusal: the Proxy-Status error type to expect is missing")
	}
	if resp.StatusCode != status || resp.Header.Get("X-Robotsgate-Decision") != decision {
		t.Errorf("status %d decision %q, want %d %q", resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"), status, decision)
	}
	ps := resp.Header.Get("Proxy-Status")
	rest, ok := strings.CutPrefix(ps, "robotsgate; error=")
	if got, _, _ := strings.Cut(rest, ";"); !ok || got != errorType {
		t.Errorf("Proxy-Status %q, want error=%s", ps, errorType)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
}

func TestRefusalAsJSON(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	resp, body := get(t, p.client(), o.URL+"/private/x", "Accept", "application/json", "User-Agent", "TestBot")
	var e refusal.Explanation
	if err := json.Unmarshal([]byte(body), &e); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("not JSON (%v): %s", err, body)
	}
	want := refusal.Explanation{Decision: "disallow", Status: 403, URL: o.URL + "/private/x", UserAgent: "TestBot", Group: "*",
		Rule: "Disallow: /private", Line: 2, RobotsURL: o.URL + "/robots.txt", RobotsInfo: "ok"}
	e.Message = ""
	if !reflect.DeepEqual(e, want) {
		t.Errorf("got %+v\nwant %+v", e, want)
	}
}

// A refusal judged by a clients entry's fixed agent and purposes names the
// entry, so that "Group: User-agent: *" for a curl request is explained.
func TestRefusalNamesTheClientsEntryThatSetTheAgent(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Agent: "ResearchBot", Purposes: []string{"search"}}}
	p := startProxy(t, cfg)
	resp, body := get(t, p.client(), o.URL+"/private/x", "User-Agent", "curl/7.88.1")
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")
	for _, want := range []string{"User-Agent:  curl/7.88.1\n", "Agent:       ResearchBot (clients entry 127.0.0.0/8)\n",
		"Purposes:    search (clients entry 127.0.0.0/8)\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, body)
		}
	}
	_, body = get(t, p.client(), o.URL+"/private/x", "User-Agent", "curl/7.88.1", "Accept", "application/json")
	var e refusal.Explanation
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.ClientRule != "127.0.0.0/8" || e.Agent != "ResearchBot" ||
		!reflect.DeepEqual(e.Purposes, []string{"search"}) {
		t.Errorf("JSON refusal (%v): %s", err, body)
	}
}

func TestHTTPSInterceptedEveryRequestJudged(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	p := startProxy(t, testConfig(t, o.Certificate()))
	c := p.client()
	resp, body := get(t, c, o.URL+"/public")
	if resp.StatusCode != 200 || body != "target=/public" {
		t.Fatalf("allowed over HTTPS: %d %q", resp.StatusCode, body)
	}
	resp, body = get(t, c, o.URL+"/private/x")
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")
	if !strings.Contains(body, "https://127.0.0.1:") || o.saw("/private/x") {
		t.Errorf("body %q; origin saw %v", body, o.seen())
	}
}

func TestUnreachableRobotsRefusesWithRetryAfter(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, "", http.StatusServiceUnavailable)
	p := startProxy(t, testConfig(t, nil))
	resp, body := get(t, p.client(), o.URL+"/anything")
	checkRefusal(t, resp, 503, "unreachable", "http_request_denied")
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "HTTP 503") {
		t.Errorf("Retry-After %q body %q", resp.Header.Get("Retry-After"), body)
	}
	if o.saw("/anything") {
		t.Error("request forwarded although robots.txt is unreachable")
	}
}

func TestUnavailableRobotsAllowsEverything(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, "", http.StatusNotFound)
	p := startProxy(t, testConfig(t, nil))
	if resp, _ := get(t, p.client(), o.URL+"/private/x"); resp.StatusCode != 200 {
		t.Errorf("404 robots.txt: %d, want the page", resp.StatusCode)
	}
}

func TestRobotsTxtItselfIsAlwaysAllowed(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, "User-agent: *\nDisallow: /\n", 0)
	p := startProxy(t, testConfig(t, nil))
	if resp, body := get(t, p.client(), o.URL+"/robots.txt"); resp.StatusCode != 200 || !strings.Contains(body, "Disallow: /") {
		t.Errorf("/robots.txt: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, p.client(), o.URL+"/x"); resp.StatusCode != 403 {
		t.Errorf("/x: %d", resp.StatusCode)
	}
}

func TestEvasionSpellingsAreRefused(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	for _, target := range []string{"/%70rivate", "/public/../private", "//private", "/%2e%2e/private", "/public/%2E%2E/private/x"} {
		c := dialProxy(t, p)
		resp, _ := c.roundTrip(t, fmt.Sprintf("GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n", host, target, host))
		if resp.StatusCode != 403 {
			t.Errorf("%s: %d, want 403", target, resp.StatusCode)
		}
	}
	for _, tt := range o.seen() {
		if tt != "/robots.txt" {
			t.Errorf("origin received %q", tt)
		}
	}
}

func TestStrictPathsOffGivesGooglesVerdict(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Robots.StrictPaths = false
	p := startProxy(t, cfg)
	host := strings.TrimPrefix(o.URL, "http://")
	resp, body := dialProxy(t, p).roundTrip(t, fmt.Sprintf("GET http://%s/%%70rivate HTTP/1.1\r\nHost: %s\r\n\r\n", host, host))
	if resp.StatusCode != 200 || body != "target=/%70rivate" {
		t.Errorf("%d %q: with strict_paths off the raw path is Google's to judge", resp.StatusCode, body)
	}
}

func TestRequestTargetForwardedUnchanged(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	long := "/public?q=" + strings.Repeat("a", 16<<10)
	for _, target := range []string{"/a%2Fb?x=%41&y", "/p;param=1?q", "/%7Euser/x", "/a/./b", "/search?q=%e4%b8%ad", long, "/x?"} {
		c := dialProxy(t, p)
		resp, body := c.roundTrip(t, fmt.Sprintf("GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n", host, target, host))
		if resp.StatusCode != 200 || body != "target="+target {
			t.Errorf("%.60s: %d, origin got %.80q", target, resp.StatusCode, body)
		}
	}
}

func TestKeepAliveAcrossAllowedAndRefusedInTunnel(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	p := startProxy(t, testConfig(t, o.Certificate()))
	host := strings.TrimPrefix(o.URL, "https://")
	tc := dialProxy(t, p).connect(t, p, host, "127.0.0.1")
	for i, tt := range []struct {
		target string
		status int
	}{{"/a", 200}, {"/private/1", 403}, {"/b", 200}, {"/private/2", 403}, {"/c", 200}} {
		resp, body := tc.roundTrip(t, fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", tt.target, host))
		if resp.StatusCode != tt.status || resp.Close {
			t.Fatalf("request %d %s: %d close=%v %q", i, tt.target, resp.StatusCode, resp.Close, body)
		}
	}
	if n := o.conns.Load(); n > 2 { // one for robots.txt, one for the pages
		t.Errorf("origin saw %d connections: upstream connections not reused", n)
	}
	// The status page keeps the refusals' records although the connection
	// reuses its audit slot for the requests that follow.
	recent := viewOf(p.srv.stats, 10, time.Now()).Recent
	var urls []string
	for _, r := range recent {
		urls = append(urls, strings.TrimPrefix(r.URL, o.URL))
	}
	if !slices.Equal(urls, []string{"/private/2", "/private/1"}) {
		t.Errorf("latest refusals on the status page: %q, want /private/2, /private/1", urls)
	}
}

func TestTunnelRequestForAnotherHostIs421(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	p := startProxy(t, testConfig(t, o.Certificate()))
	host := strings.TrimPrefix(o.URL, "https://")
	tc := dialProxy(t, p).connect(t, p, host, "127.0.0.1")
	resp, _ := tc.roundTrip(t, "GET /public HTTP/1.1\r\nHost: other.example\r\n\r\n")
	checkRefusal(t, resp, http.StatusMisdirectedRequest, "misdirected", "http_request_error")
	resp, _ = tc.roundTrip(t, fmt.Sprintf("GET /public HTTP/1.1\r\nHost: %s\r\n\r\n", host))
	if resp.StatusCode != 200 {
		t.Errorf("the tunnel's own host after a 421: %d", resp.StatusCode)
	}
	if len(o.seen()) != 2 {
		t.Errorf("origin saw %v", o.seen())
	}
}

func TestUpstreamDownIs502WithoutErrorText(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tlsOn), func(t *testing.T) {
			o := startOrigin(t, "127.0.0.1", tlsOn, testRobots, 0)
			var cfg config.Config
			if tlsOn {
				cfg = testConfig(t, o.Certificate())
			} else {
				cfg = testConfig(t, nil)
			}
			p := startProxy(t, cfg)
			c := p.client()
			if resp, _ := get(t, c, o.URL+"/up"); resp.StatusCode != 200 {
				t.Fatalf("origin up: %d", resp.StatusCode)
			}
			o.Close() // robots.txt stays cached; the origin is gone
			c.CloseIdleConnections()
			resp, body := get(t, c, o.URL+"/down")
			checkRefusal(t, resp, http.StatusBadGateway, "upstream-error", "connection_refused")
			for _, leak := range []string{"127.0.0.1", "dial", "refused", "tcp"} {
				if strings.Contains(body, leak) {
					t.Errorf("body leaks %q: %s", leak, body)
				}
			}
		})
	}
}

func TestEgressGuardRefusesLoopbackByDefault(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", false, testRobots, 0)
	cfg := config.Default()
	cfg.Listen, cfg.AdminListen, cfg.Archive.Dir, cfg.Log.Audit = "127.0.0.1:0", "", "", ""
	p := startProxy(t, cfg)
	resp, _ := get(t, p.client(), o.URL+"/x")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	host := strings.TrimPrefix(o.URL, "http://")
	resp, _ = dialProxy(t, p).roundTrip(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host))
	// A refused CONNECT explains itself in its headers, naming the key
	// that would allow it (regression: details="egress-denied" only).
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	if ps := resp.Header.Get("Proxy-Status"); !strings.Contains(ps, `details="egress-denied: The destination is on a loopback network`) || !strings.Contains(ps, "egress.allow_networks") {
		t.Errorf("Proxy-Status %q does not name egress.allow_networks", ps)
	}
	if len(o.seen()) != 0 {
		t.Errorf("origin saw %v", o.seen())
	}
}

func TestMalformedRequestsAreNotForwarded(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	host := strings.TrimPrefix(o.URL, "http://")
	smuggle := fmt.Sprintf("POST http://%s/public HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", host, host)
	if resp, _ := dialProxy(t, p).roundTrip(t, smuggle); resp.StatusCode != 400 {
		t.Errorf("Content-Length with Transfer-Encoding: %d, want 400", resp.StatusCode)
	}
	huge := fmt.Sprintf("GET http://%s/public HTTP/1.1\r\nHost: %s\r\nX-Big: %s\r\n\r\n", host, host, strings.Repeat("b", 1100<<10))
	if resp, _ := dialProxy(t, p).roundTrip(t, huge); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("1.1 MiB head: %d, want 431", resp.StatusCode)
	}
	if resp, _ := dialProxy(t, p).roundTrip(t, "GET http://%zz/ HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 400 {
		t.Errorf("bad URL: %d, want 400", resp.StatusCode)
	}
	if resp, _ := dialProxy(t, p).roundTrip(t, "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 400 {
		t.Errorf("origin-form request to the proxy: %d, want 400", resp.StatusCode)
	}
	if len(o.seen()) != 0 {
		t.Errorf("origin saw %v", o.seen())
	}
}

func TestMalformedRequestInTunnelIs400(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	p := startProxy(t, testConfig(t, o.Certificate()))
	host := strings.TrimPrefix(o.URL, "https://")
	tc := dialProxy(t, p).connect(t, p, host, "127.0.0.1")
	resp, _ := tc.roundTrip(t, fmt.Sprintf("POST /public HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", host))
	if resp.StatusCode != 400 {
		t.Errorf("smuggling attempt in tunnel: %d, want 400", resp.StatusCode)
	}
	if o.saw("/public") {
		t.Error("forwarded")
	}
}

func TestBlindTunnels(t *testing.T) {
	allowed := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	closed := startOrigin(t, "127.0.0.1", true, "User-agent: *\nDisallow: /\n", 0)
	cfg := testConfig(t, allowed.Certificate())
	cfg.MITM.SkipHosts = []string{"127.0.0.1"}
	_, allowedPort, _ := net.SplitHostPort(strings.TrimPrefix(allowed.URL, "https://"))
	_, closedPort, _ := net.SplitHostPort(strings.TrimPrefix(closed.URL, "https://"))
	var ports []int
	for _, s := range []string{allowedPort, closedPort} {
		var n int
		fmt.Sscan(s, &n)
		ports = append(ports, n)
	}
	cfg.Egress.TunnelPorts = ports
	p := startProxy(t, cfg)

	// Not intercepted: the client sees the origin's own certificate.
	c := p.client()
	c.Transport.(*http.Transport).TLSClientConfig.RootCAs = allowed.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	if resp, body := get(t, c, allowed.URL+"/private/x"); resp.StatusCode != 200 || body != "target=/private/x" {
		t.Errorf("blind tunnel: %d %q (paths cannot be judged)", resp.StatusCode, body)
	}
	host := strings.TrimPrefix(closed.URL, "https://")
	resp, _ := dialProxy(t, p).roundTrip(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host))
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")

	cfg.Egress.TunnelPorts = []int{443}
	if err := p.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	host = strings.TrimPrefix(allowed.URL, "https://")
	resp, _ = dialProxy(t, p).roundTrip(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host))
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
}

func TestAllowPortsRestrictsEveryDestination(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Egress.AllowPorts = []int{443}
	p := startProxy(t, cfg)
	resp, _ := get(t, p.client(), o.URL+"/public")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
}

func TestProxyEnvironmentIsIgnored(t *testing.T) {
	trap := startOrigin(t, "127.0.0.3", false, "", 0)
	t.Setenv("HTTP_PROXY", trap.URL)
	t.Setenv("HTTPS_PROXY", trap.URL)
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	tlsOrigin := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	p := startProxy(t, testConfig(t, tlsOrigin.Certificate()))
	if resp, _ := get(t, p.client(), o.URL+"/public"); resp.StatusCode != 200 {
		t.Errorf("HTTP: %d", resp.StatusCode)
	}
	if resp, _ := get(t, p.client(), tlsOrigin.URL+"/public"); resp.StatusCode != 200 {
		t.Errorf("HTTPS: %d", resp.StatusCode)
	}
	if len(trap.seen()) != 0 {
		t.Errorf("the proxy from the environment received %v", trap.seen())
	}
}

// TestRobotsTooCostlyToJudgeIsRefused: a hostile origin's robots.txt built
// so that judging a path costs milliseconds gets a 403 that says so, not a
// request that burns the proxy's CPU or slips through.
func TestRobotsTooCostlyToJudgeIsRefused(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := 0; sb.Len() < robots.MaxFileSize-40; i++ {
		fmt.Fprintf(&sb, "Disallow: /*b%dx\n", i)
	}
	o := startOrigin(t, "127.0.0.2", false, sb.String(), 0)
	p := startProxy(t, testConfig(t, nil))
	target := "/" + strings.Repeat("b1", 1023) + "b"
	resp, body := get(t, p.client(), o.URL+target)
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")
	if !strings.Contains(body, "too costly") {
		t.Errorf("403 body does not say why:\n%s", body)
	}
	if o.saw(target) {
		t.Error("the origin received the request")
	}
}

// A CONNECT refused before any decision (here by the egress guard) is
// audited by its authority, host:port (regression: "//host:port").
func TestRefusedConnectIsAuditedByAuthority(t *testing.T) {
	cfg := testConfig(t, nil)
	cfg.Egress.AllowNetworks = nil
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	resp, _ := dialProxy(t, p).roundTrip(t, "CONNECT 127.0.0.9:443 HTTP/1.1\r\nHost: 127.0.0.9:443\r\n\r\n")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	if r := waitAudit(t, cfg.Log.Audit, 1)[0]; r["url"] != "127.0.0.9:443" || r["method"] != "CONNECT" {
		t.Errorf("audit record %v, want url 127.0.0.9:443", r)
	}
}
