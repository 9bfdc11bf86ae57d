package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/robotsgate/robotsgate/config"
)

func withProxyUser(c *http.Client, p *testProxy, user, pass string) *http.Client {
	u, _ := url.Parse("http://" + p.addr)
	u.User = url.UserPassword(user, pass)
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(u)
	return c
}

func TestProxyAuthentication(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	tlsOrigin := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	cfg := testConfig(t, tlsOrigin.Certificate())
	h, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	cfg.Clients = []config.Client{{User: "alice", PasswordBcrypt: string(h), Mode: config.ModeEnforce}}
	p := startProxy(t, cfg)

	resp, _ := get(t, p.client(), o.URL+"/public")
	checkRefusal(t, resp, http.StatusProxyAuthRequired, "auth-required", "http_request_denied")
	if got := resp.Header.Get("Proxy-Authenticate"); got != `Basic realm="robotsgate"` {
		t.Errorf("Proxy-Authenticate %q", got)
	}
	if resp, _ := get(t, withProxyUser(p.client(), p, "alice", "wrong"), o.URL+"/public"); resp.StatusCode != 407 {
		t.Errorf("wrong password: %d", resp.StatusCode)
	}
	if resp, body := get(t, withProxyUser(p.client(), p, "alice", "s3cret"), o.URL+"/public"); resp.StatusCode != 200 || body != "target=/public" {
		t.Errorf("right password: %d %q", resp.StatusCode, body)
	}
	host := strings.TrimPrefix(tlsOrigin.URL, "https://")
	resp, _ = dialProxy(t, p).roundTrip(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host))
	if resp.StatusCode != 407 {
		t.Errorf("CONNECT without credentials: %d", resp.StatusCode)
	}
	if resp, _ := get(t, withProxyUser(p.client(), p, "alice", "s3cret"), tlsOrigin.URL+"/public"); resp.StatusCode != 200 {
		t.Errorf("HTTPS with credentials: %d", resp.StatusCode)
	}
}

func TestMonitorModeForwardsAndLogs(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeMonitor}}
	p := startProxy(t, cfg)
	if resp, body := get(t, p.client(), o.URL+"/private/x"); resp.StatusCode != 200 || body != "target=/private/x" {
		t.Fatalf("monitor mode: %d %q, want the page", resp.StatusCode, body)
	}
	if logs := p.logText(); !strings.Contains(logs, "would be refused") || !strings.Contains(logs, "decision=disallow") {
		t.Errorf("the would-be refusal is not logged:\n%s", logs)
	}
}

func TestBypassModeSkipsRobotsButNotEgress(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	blocked := startOrigin(t, "127.0.0.4", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeBypass}}
	p := startProxy(t, cfg)
	if resp, _ := get(t, p.client(), o.URL+"/private/x"); resp.StatusCode != 200 {
		t.Errorf("bypass: %d", resp.StatusCode)
	}
	if o.saw("/robots.txt") {
		t.Error("robots.txt fetched for a bypass client")
	}
	resp, _ := get(t, p.client(), blocked.URL+"/x")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
}

func TestFixedAgentJudgesTheClient(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Agent: "FooBot"}}
	p := startProxy(t, cfg)
	resp, body := get(t, p.client(), o.URL+"/foo-only", "User-Agent", "curl/8")
	checkRefusal(t, resp, 403, "disallow", "http_request_denied")
	if !strings.Contains(body, "User-agent: FooBot") {
		t.Errorf("body does not name FooBot's group:\n%s", body)
	}
}

func TestPurposesAgainstAIUsagePreferences(t *testing.T) {
	robotsTxt := "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /open/ train-ai=y\nContent-Signal: search=yes, ai-input=no\nAllow: /\n"
	o := startOrigin(t, "127.0.0.2", false, robotsTxt, 0)
	cfg := testConfig(t, nil)
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: []string{"train-ai", "ai-input"}}}
	p := startProxy(t, cfg)
	resp, body := get(t, p.client(), o.URL+"/article")
	checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
	if !strings.Contains(body, "train-ai=n (line 2)") {
		t.Errorf("body does not name the preference:\n%s", body)
	}
	resp, body = get(t, p.client(), o.URL+"/open/x")
	checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
	if !strings.Contains(body, "ai-input=no (line 4)") {
		t.Errorf("Content-Signal refusal not named:\n%s", body)
	}

	cfg.Clients[0].Purposes = []string{"search"}
	if err := p.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, p.client(), o.URL+"/article"); resp.StatusCode != 200 {
		t.Errorf("search purpose: %d", resp.StatusCode)
	}
}

func TestTrapGuard(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Trap = config.Trap{Enabled: true, MaxURLLength: 64, MaxRepeatedSegments: 3, PageBudget: 3, BudgetWindow: config.Duration(time.Hour)}
	p := startProxy(t, cfg)
	c := p.client()
	resp, _ := get(t, c, o.URL+"/q?"+strings.Repeat("x", 80))
	checkRefusal(t, resp, 403, "trap-denied", "http_request_denied")
	resp, _ = get(t, c, o.URL+"/a/b/a/b/a/b/a/b")
	checkRefusal(t, resp, 403, "trap-denied", "http_request_denied")
	for i := range 3 {
		if resp, _ := get(t, c, fmt.Sprintf("%s/page%d", o.URL, i)); resp.StatusCode != 200 {
			t.Fatalf("page %d: %d", i, resp.StatusCode)
		}
	}
	resp, _ = get(t, c, o.URL+"/page4")
	checkRefusal(t, resp, 429, "trap-denied", "http_request_denied")
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 3500 || ra > 3600 {
		t.Errorf("Retry-After %q, want the rest of the hour", resp.Header.Get("Retry-After"))
	}
	if o.saw("/page4") {
		t.Error("page over budget forwarded")
	}
}

// TestSiteIgnoringRobots: a site set to robots: ignore is not judged by
// robots.txt, the crawler-trap guard or the AI-usage signals (no
// tdmrep.json is fetched even for a train-ai client), but its delay floor
// still paces it.
func TestSiteIgnoringRobots(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	cfg.Sites = []config.Site{{Hosts: []string{"127.0.0.2"}, Robots: config.RobotsIgnore, Delay: config.Duration(time.Millisecond)}}
	cfg.Trap = config.Trap{Enabled: true, PageBudget: 1, BudgetWindow: config.Duration(time.Hour)}
	purposes(&cfg, "train-ai")
	p := startProxy(t, cfg)
	for range 2 { // over the page budget
		if resp, _ := get(t, p.client(), o.URL+"/private/x"); resp.StatusCode != 200 {
			t.Errorf("ignored site: %d", resp.StatusCode)
		}
	}
	if o.saw("/robots.txt") || o.saw("/.well-known/tdmrep.json") {
		t.Errorf("ignored site: the origin was asked for %v", o.seen())
	}
	x, err := p.srv.Judge(t.Context(), o.URL+"/private/x", Asker{Purposes: []string{"train-ai"}, By: "test"}, false)
	d := x.Decision
	if err != nil || x.Refused != nil || d.Interval != time.Millisecond || d.Robots != nil || d.ResponsePurposes() != nil {
		t.Errorf("ignored site: interval %v (want the site's 1ms), robots.txt %v, response judged for %v (%v)", d.Interval, d.Robots, d.ResponsePurposes(), err)
	}
}

func TestHostListsAndPorts(t *testing.T) {
	a := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	b := startOrigin(t, "127.0.0.3", false, testRobots, 0)
	tlsOrigin := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	cfg := testConfig(t, tlsOrigin.Certificate())
	cfg.Egress.DenyHosts = []string{"127.0.0.2"}
	p := startProxy(t, cfg)
	resp, _ := get(t, p.client(), a.URL+"/x")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	if resp, _ := get(t, p.client(), b.URL+"/x"); resp.StatusCode != 200 {
		t.Errorf("host not denied: %d", resp.StatusCode)
	}

	cfg.Egress.DenyHosts = nil
	cfg.Egress.AllowHosts = []string{"127.0.0.2"}
	cfg.Egress.AllowPorts = []int{443}
	if err := p.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	resp, _ = get(t, p.client(), b.URL+"/x")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	host := strings.TrimPrefix(tlsOrigin.URL, "https://")
	resp, body := dialProxy(t, p).roundTrip(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host))
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	if len(a.seen())+len(b.seen()) != 2 || len(tlsOrigin.seen()) != 0 {
		t.Errorf("origins saw %v %v %v (%s)", a.seen(), b.seen(), tlsOrigin.seen(), body)
	}
}

func TestRequestToTheProxyItselfIsRefused(t *testing.T) {
	cfg := testConfig(t, nil)
	p := startProxy(t, cfg) // 127.0.0.1 is allowed: only the self check stops the loop
	resp, _ := get(t, p.client(), "http://"+p.addr+"/x")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
}

// rebindResolver answers every name with one forbidden address.
type rebindResolver struct{ ip netip.Addr }

func (r rebindResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{r.ip}, nil
}

func TestNameResolvingToForbiddenAddressIsNeverDialled(t *testing.T) {
	for _, ip := range []string{"169.254.169.254", "10.0.0.1", "127.0.0.1", "::ffff:192.168.0.1", "fd00::1"} {
		t.Run(ip, func(t *testing.T) {
			var mu sync.Mutex
			var dialled []string
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				mu.Lock()
				defer mu.Unlock()
				dialled = append(dialled, addr)
				return nil, errors.New("recording dialer never connects")
			}
			cfg := config.Default()
			cfg.Listen, cfg.AdminListen, cfg.Archive.Dir, cfg.Log.Audit = "127.0.0.1:0", "", "", ""
			p := startProxyWith(t, cfg, Options{Resolver: rebindResolver{netip.MustParseAddr(ip)}, Dial: dial})
			resp, _ := get(t, p.client(), "http://public-looking.example/x")
			checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
			resp, _ = dialProxy(t, p).roundTrip(t, "CONNECT public-looking.example:443 HTTP/1.1\r\nHost: public-looking.example:443\r\n\r\n")
			checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
			mu.Lock()
			defer mu.Unlock()
			if len(dialled) != 0 {
				t.Errorf("dialled %v", dialled)
			}
		})
	}
}

func TestIdentificationHeadersAreAddedAfterTheDecision(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	o := startOrigin(t, "127.0.0.2", false, "User-agent: Contact\nDisallow: /\n", 0)
	o.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: Contact\nDisallow: /\n")
			return
		}
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
	})
	cfg := testConfig(t, nil)
	cfg.Identify = config.Identify{From: "crawler@example.org", UserAgentSuffix: "(+Contact: crawler@example.org)"}
	p := startProxy(t, cfg)
	if resp, _ := get(t, p.client(), o.URL+"/page", "User-Agent", "ResearchBot/1.0"); resp.StatusCode != 200 {
		t.Fatalf("status %d: the suffix's token must not change the decision", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Get("From") != "crawler@example.org" || got.Get("User-Agent") != "ResearchBot/1.0 (+Contact: crawler@example.org)" {
		t.Errorf("origin saw From %q User-Agent %q", got.Get("From"), got.Get("User-Agent"))
	}
}

func TestRobotsRedirectToForbiddenAddressIsNotFollowed(t *testing.T) {
	internal := startOrigin(t, "127.0.0.1", false, "User-agent: *\nAllow: /\n", 0)
	o := startOrigin(t, "127.0.0.2", false, "", 0)
	o.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/robots.txt", http.StatusFound)
	})
	cfg := testConfig(t, nil)
	cfg.Egress.AllowNetworks = []string{"127.0.0.2/32"}
	p := startProxy(t, cfg)
	resp, _ := get(t, p.client(), o.URL+"/page")
	checkRefusal(t, resp, 503, "unreachable", "destination_ip_prohibited")
	if len(internal.seen()) != 0 {
		t.Errorf("the redirect to a forbidden address was followed: %v", internal.seen())
	}
}

// egress.allow_ports applies to every connection, the redirects of a
// robots.txt fetch included: a robots.txt that redirects to a port outside
// the list is not followed there (regression: a direct request to that
// port got 403, the redirect was followed).
func TestRobotsRedirectToAPortNotAllowedIsNotFollowed(t *testing.T) {
	other := startOrigin(t, "127.0.0.3", false, "User-agent: *\nAllow: /\n", 0)
	o := startOrigin(t, "127.0.0.2", false, "", 0)
	o.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/robots.txt", http.StatusFound)
	})
	port, _ := strconv.Atoi(o.URL[strings.LastIndex(o.URL, ":")+1:])
	cfg := testConfig(t, nil)
	cfg.Egress.AllowPorts = []int{port}
	cfg.Archive.Dir = t.TempDir()
	p := startProxy(t, cfg)
	resp, _ := get(t, p.client(), o.URL+"/page")
	checkRefusal(t, resp, 503, "unreachable", "destination_ip_prohibited")
	if len(other.seen()) != 0 {
		t.Errorf("the redirect to a port outside egress.allow_ports was followed: %v", other.seen())
	}
	resp, _ = get(t, p.client(), other.URL+"/page")
	checkRefusal(t, resp, 403, "egress-denied", "destination_ip_prohibited")
	// The fetch log names the redirect target that was refused.
	p.srv.Shutdown(t.Context()) // the archive's writer flushes
	logs, _ := filepath.Glob(filepath.Join(cfg.Archive.Dir, "fetches", "*.jsonl"))
	var lines []byte
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		lines = append(lines, data...)
	}
	if !strings.Contains(string(lines), `"final_url":"`+other.URL+`/robots.txt"`) {
		t.Errorf("the fetch log does not name the refused redirect target %s/robots.txt:\n%s", other.URL, lines)
	}
}

// clients_default: deny refuses clients that no entry matches with 403
// client-denied, for plain requests and CONNECTs; matched clients pass.
func TestClientsDefaultDenyRefusesUnmatchedClients(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	host := strings.TrimPrefix(o.URL, "http://")
	for _, tt := range []struct {
		name    string
		clients []config.Client
		status  int
	}{
		{"no entry matches", []config.Client{{CIDR: "10.0.0.0/8", Mode: config.ModeEnforce}}, 403},
		{"an entry matches", []config.Client{{CIDR: "127.0.0.1/32", Mode: config.ModeEnforce}}, 200},
	} {
		cfg := testConfig(t, nil)
		cfg.ClientsDefault, cfg.Clients = config.ClientsDeny, tt.clients
		p := startProxy(t, cfg)
		resp, _ := get(t, p.client(), o.URL+"/page")
		if resp.StatusCode != tt.status {
			t.Errorf("%s: GET %d, want %d", tt.name, resp.StatusCode, tt.status)
		}
		if tt.status == 403 {
			checkRefusal(t, resp, 403, "client-denied", "http_request_denied")
			if ps := resp.Header.Get("Proxy-Status"); !strings.Contains(ps, "clients_default is deny") {
				t.Errorf("Proxy-Status %q does not name clients_default", ps)
			}
			resp, _ = dialProxy(t, p).roundTrip(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host))
			checkRefusal(t, resp, 403, "client-denied", "http_request_denied")
		}
	}
}

// A proxy that listens beyond loopback with no clients entries and
// clients_default allow is open to anyone: it says so at start.
func TestOpenProxyWarning(t *testing.T) {
	for _, tt := range []struct {
		name    string
		addr    string
		deny    bool
		clients []config.Client
		warn    bool
	}{
		{"loopback", "127.0.0.1:8080", false, nil, false},
		{"all interfaces, allow, no clients", "0.0.0.0:8080", false, nil, true},
		{"a public address, allow, no clients", "192.0.2.1:8080", false, nil, true},
		{"all interfaces, deny", "0.0.0.0:8080", true, nil, false},
		{"all interfaces, clients entries", "0.0.0.0:8080", false, []config.Client{{CIDR: "10.0.0.0/8", Mode: config.ModeEnforce}}, false},
	} {
		cfg := testConfig(t, nil)
		cfg.Clients = tt.clients
		if tt.deny {
			cfg.ClientsDefault = config.ClientsDeny
		}
		p := startProxy(t, cfg)
		before := strings.Count(p.logText(), "open proxy")
		p.srv.warnIfOpen(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(tt.addr)))
		if warned := strings.Count(p.logText(), "level=WARN msg=\"open proxy") > before; warned != tt.warn {
			t.Errorf("%s: warned %v, want %v:\n%s", tt.name, warned, tt.warn, p.logText())
		}
	}
}

// Failed proxy credentials are limited per address: past
// auth.failure_limit in a minute, even the right password gets 429
// auth-limited unchecked; missing credentials (the 407 challenge) do not
// count; the failures are in robotsgate_auth_failures_total.
func TestFailedCredentialsAreLimitedPerAddress(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, nil)
	h, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	cfg.Clients = []config.Client{{User: "alice", PasswordBcrypt: string(h), Mode: config.ModeEnforce}}
	cfg.Auth.FailureLimit = 3
	p := startProxy(t, cfg)
	for range 5 { // challenges, not failures
		if resp, _ := get(t, p.client(), o.URL+"/public"); resp.StatusCode != 407 {
			t.Fatalf("without credentials: %d", resp.StatusCode)
		}
	}
	for i, user := range []string{"alice", "mallory", "alice"} {
		if resp, _ := get(t, withProxyUser(p.client(), p, user, "guess"), o.URL+"/public"); resp.StatusCode != 407 {
			t.Fatalf("failure %d: %d, want 407", i+1, resp.StatusCode)
		}
	}
	resp, _ := get(t, withProxyUser(p.client(), p, "alice", "s3cret"), o.URL+"/public")
	checkRefusal(t, resp, http.StatusTooManyRequests, "auth-limited", "http_request_denied")
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Errorf("Retry-After %q, want at most a minute", resp.Header.Get("Retry-After"))
	}
	_, metrics := adminGet(t, startAdmin(t, p), "/metrics")
	if v := metricValue(metrics, "robotsgate_auth_failures_total"); v != "3" {
		t.Errorf("robotsgate_auth_failures_total = %q, want 3", v)
	}
}
