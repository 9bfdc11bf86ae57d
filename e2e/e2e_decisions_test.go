//go:build unix

package e2e

// One decision, three ways in: a request through the proxy, `robotsgate
// check -fetch` and /explain?fetch=1 must come to the same decision, with
// the same rule, for the same client and URL. The table covers what a
// decision rests on: robots.txt groups and rules, the evasion guard, sites,
// the trap guard, deny lists and the egress guard, monitor and bypass
// clients, fixed agents, purposes against tdmrep.json, robots.txt lines,
// response headers and meta tags, and Crawl-delay.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
)

// decisionsRobots is the main origin's robots.txt; the line numbers are
// asserted by the table.
const decisionsRobots = `User-agent: *
Disallow: /private
Allow: /private/open
Disallow: /*.pdf$
Content-Usage: /cu-off train-ai=n
Disallow: /@admin

User-agent: ResearchBot
Disallow: /research-off

User-agent: Paced
Crawl-delay: 1
Disallow: /paced-off
`

// decisionsPassword is every test user's proxy password.
const decisionsPassword = "secret"

// startOriginAt serves h on a loopback address of its own (sites, deny
// lists and the egress guard tell origins apart by host).
func startOriginAt(t *testing.T, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	startAt(t, s, ip, false)
	return s
}

// startAt starts the unstarted server s on a port of loopback address ip
// (with TLS when useTLS) until the test ends.
func startAt(t *testing.T, s *httptest.Server, ip string, useTLS bool) {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	s.Listener.Close()
	s.Listener = ln
	if useTLS {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
}

// decisionsOrigin answers the main origin's paths: robots.txt, tdmrep.json,
// pages whose header fields or meta tags carry AI-usage signals, and "page"
// for everything else.
func decisionsOrigin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, decisionsRobots)
			return
		case "/.well-known/tdmrep.json":
			io.WriteString(w, `[{"location": "/tdmres/*", "tdm-reservation": 1}]`)
			return
		case "/hdr/noai":
			w.Header().Set("X-Robots-Tag", "noai")
		case "/hdr/tdm":
			w.Header().Set("Tdm-Reservation", "1")
		case "/hdr/cu":
			w.Header().Set("Content-Usage", "train-ai=n")
		case "/hdr/scoped":
			w.Header().Set("X-Robots-Tag", "ResearchBot: noai")
		case "/meta/noai":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!doctype html><html><head><meta name="robots" content="noai"></head><body>page</body></html>`)
			return
		}
		io.WriteString(w, "page")
	})
}

// decisionCase is one request, and the decision all three must agree on.
type decisionCase struct {
	name, user, ua string
	url            string
	decision       string // the decision value
	rule           string // the robots.txt rule, "" for none
	line           int
}

// decisionsConfig is the configuration of the test: users for each kind of
// client, a site set to ignore robots.txt, a deny list, the trap guard and
// meta tag scanning.
func decisionsConfig(t *testing.T, dir, ignored, denied, listed string) string {
	hash, err := bcrypt.GenerateFromPassword([]byte(decisionsPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	listFile := filepath.Join(dir, "deny.txt")
	writeFile(t, listFile, "# hosts refused\n"+listed+"\n")
	user := func(name, extra string) string {
		return fmt.Sprintf("  - {user: %s, password_bcrypt: %q%s}\n", name, hash, extra)
	}
	base := e2eConfig{dir: dir, allowNetworks: "127.0.0.0/16", strictPaths: true}.yaml()
	egress := "egress:\n  allow_networks: [127.0.0.0/16]\n"
	if !strings.Contains(base, egress) {
		t.Fatalf("the base configuration has no %q:\n%s", egress, base)
	}
	base = strings.Replace(base, egress, egress+fmt.Sprintf("  deny_hosts: [%q]\n  deny_hosts_files: [%q]\n", denied, listFile), 1)
	return base + fmt.Sprintf(`pacing:
  max_wait: 10s
usage:
  scan_html: true
trap:
  enabled: true
  max_url_length: 200
sites:
  - {hosts: [%q], robots: ignore}
clients:
`, ignored) +
		user("monitor", ", mode: monitor") +
		user("bypass", ", mode: bypass") +
		user("research", ", agent: ResearchBot") +
		user("trainer", ", purposes: [train-ai]") +
		user("researchtrainer", ", agent: ResearchBot, purposes: [train-ai]") +
		user("montrainer", ", mode: monitor, purposes: [train-ai]") +
		"  - {cidr: 127.0.0.0/8}\n"
}

func TestE2EProxyCheckAndExplainDecideAlike(t *testing.T) {
	dir := t.TempDir()
	main := startOriginAt(t, "127.0.0.21", decisionsOrigin())
	ignored := startOriginAt(t, "127.0.0.22", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, map[bool]string{true: "User-agent: *\nDisallow: /\n", false: "page"}[r.URL.Path == "/robots.txt"])
	}))
	unreachable := startOriginAt(t, "127.0.0.25", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	unavailable := startOriginAt(t, "127.0.0.26", http.NotFoundHandler())
	port := main.Listener.Addr().(*net.TCPAddr).Port
	denied := fmt.Sprintf("http://127.0.0.23:%d", port)  // deny_hosts; never contacted
	listed := fmt.Sprintf("http://127.0.0.24:%d", port)  // the deny list file; never contacted
	private := fmt.Sprintf("http://127.1.0.27:%d", port) // outside allow_networks; never contacted
	cfgPath, auditPath := filepath.Join(dir, "cfg.yaml"), filepath.Join(dir, "audit.log")
	writeFile(t, cfgPath, decisionsConfig(t, dir, "127.0.0.22", "127.0.0.23", "127.0.0.24")+fmt.Sprintf("log:\n  audit: %q\n", auditPath))

	m := main.URL
	long := m + "/" + strings.Repeat("x", 220)
	cases := []decisionCase{
		{"allowed page", "", "TestBot/1.0", m + "/page", "allow", "", 0},
		{"disallowed path", "", "TestBot/1.0", m + "/private/x", "disallow", "Disallow: /private", 2},
		{"longer allow wins", "", "TestBot/1.0", m + "/private/open/x", "allow", "Allow: /private/open", 3},
		{"wildcard and end anchor", "", "TestBot/1.0", m + "/doc.pdf", "disallow", "Disallow: /*.pdf$", 4},
		{"end anchor, query after it", "", "TestBot/1.0", m + "/doc.pdf?x=1", "allow", "", 0},
		{"case matters", "", "TestBot/1.0", m + "/Private/x", "allow", "", 0},
		{"percent-encoded unreserved (evasion guard)", "", "TestBot/1.0", m + "/%70rivate/x", "disallow", "Disallow: /private", 2},
		{"dot segments (evasion guard)", "", "TestBot/1.0", m + "/public/../private/x", "disallow", "Disallow: /private", 2},
		{"double slash (evasion guard)", "", "TestBot/1.0", m + "//private/x", "disallow", "Disallow: /private", 2},
		{"encoded reserved character (evasion guard)", "", "TestBot/1.0", m + "/%40admin", "disallow", "Disallow: /@admin", 6},
		{"encoded slash is another path", "", "TestBot/1.0", m + "/private%2Fx", "disallow", "Disallow: /private", 2},
		{"encoded slash, not a rule's path", "", "TestBot/1.0", m + "/pub%2F..%2Fprivate", "allow", "", 0},
		{"robots.txt itself", "", "TestBot/1.0", m + "/robots.txt", "allow", "", 0},
		{"group of the agent", "", "Mozilla/5.0 (compatible; ResearchBot/2.0)", m + "/research-off", "disallow", "Disallow: /research-off", 9},
		{"the agent's group only", "", "ResearchBot/2.0", m + "/private/x", "allow", "", 0},
		{"fixed agent", "research", "curl/7.88.1", m + "/research-off", "disallow", "Disallow: /research-off", 9},
		{"fixed agent, other group's rule", "research", "curl/7.88.1", m + "/private/x", "allow", "", 0},
		{"monitored client", "monitor", "TestBot/1.0", m + "/private/x", "disallow", "Disallow: /private", 2},
		{"bypass client", "bypass", "TestBot/1.0", m + "/private/x", "allow", "", 0},
		{"Crawl-delay group", "", "Paced/1.0", m + "/page", "allow", "", 0},
		{"Crawl-delay group's rule", "", "Paced/1.0", m + "/paced-off", "disallow", "Disallow: /paced-off", 13},
		{"purpose, robots.txt Content-Usage", "trainer", "TestBot/1.0", m + "/cu-off/x", "usage-denied", "", 0},
		{"purpose, tdmrep.json", "trainer", "TestBot/1.0", m + "/tdmres/x", "usage-denied", "", 0},
		{"purpose, X-Robots-Tag noai", "trainer", "TestBot/1.0", m + "/hdr/noai", "usage-denied", "", 0},
		{"purpose, tdm-reservation header", "trainer", "TestBot/1.0", m + "/hdr/tdm", "usage-denied", "", 0},
		{"purpose, Content-Usage header", "trainer", "TestBot/1.0", m + "/hdr/cu", "usage-denied", "", 0},
		{"purpose, meta robots noai", "trainer", "TestBot/1.0", m + "/meta/noai", "usage-denied", "", 0},
		{"purpose, X-Robots-Tag for another agent", "trainer", "TestBot/1.0", m + "/hdr/scoped", "allow", "", 0},
		{"purpose and fixed agent, X-Robots-Tag for it", "researchtrainer", "curl/7.88.1", m + "/hdr/scoped", "usage-denied", "", 0},
		{"purpose, page without signals", "trainer", "TestBot/1.0", m + "/page", "allow", "", 0},
		{"monitored purpose, X-Robots-Tag noai", "montrainer", "TestBot/1.0", m + "/hdr/noai", "usage-denied", "", 0},
		{"no purpose, X-Robots-Tag noai", "", "TestBot/1.0", m + "/hdr/noai", "allow", "", 0},
		{"site set to ignore robots.txt", "", "TestBot/1.0", ignored.URL + "/anything", "allow", "", 0},
		{"deny_hosts", "", "TestBot/1.0", denied + "/page", "egress-denied", "", 0},
		{"deny list file", "", "TestBot/1.0", listed + "/page", "egress-denied", "", 0},
		{"network outside allow_networks", "", "TestBot/1.0", private + "/page", "egress-denied", "", 0},
		{"robots.txt unreachable (500)", "", "TestBot/1.0", unreachable.URL + "/page", "unreachable", "", 0},
		{"robots.txt unavailable (404)", "", "TestBot/1.0", unavailable.URL + "/private/x", "allow", "", 0},
		{"trap guard, URL too long", "", "TestBot/1.0", long, "trap-denied", "", 0},
	}

	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	am := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	if am == nil {
		t.Fatalf("no admin address in the start-up log:\n%s", p.out)
	}
	adminAddr := am[1]
	// The admin listener is not reachable through the proxy, although
	// allow_networks covers its address.
	viaProxy := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: p.addr})}, Timeout: requestTimeout}
	if resp, err := viaProxy.Get("http://" + adminAddr + "/"); err != nil || resp.StatusCode != 403 || resp.Header.Get("X-Robotsgate-Decision") != "egress-denied" {
		t.Errorf("the admin listener through the proxy: %v %v, want 403 egress-denied", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]decisionSeen{
				"proxy":            proxyDecision(t, p.addr, auditPath, c),
				"check -fetch":     checkDecision(t, dir, cfgPath, c),
				"/explain?fetch=1": explainDecision(t, adminAddr, c),
			}
			for way, g := range got {
				if g.decision != c.decision || g.rule != c.rule || g.line != c.line {
					t.Errorf("%s: %s %q (line %d), want %s %q (line %d)", way, g.decision, g.rule, g.line, c.decision, c.rule, c.line)
				}
			}
			if want := checkExit(c.decision); got["check -fetch"].exit != want {
				t.Errorf("check -fetch exit status %d, want %d for %s", got["check -fetch"].exit, want, c.decision)
			}
		})
	}
}

// decisionSeen is a decision as one way in reports it.
type decisionSeen struct {
	decision, rule string
	line, exit     int
}

// checkExit is check's exit status for a decision.
func checkExit(decision string) int {
	switch decision {
	case audit.Allow:
		return 0
	case audit.Unreachable, audit.UsageUnknown:
		return 2
	}
	return 1
}

// proxyDecision sends the request through the proxy (absolute-form HTTP,
// with the user's credentials) and reads its decision from the audit log.
func proxyDecision(t *testing.T, proxyAddr, auditPath string, c decisionCase) decisionSeen {
	t.Helper()
	pu := &url.URL{Scheme: "http", Host: proxyAddr}
	if c.user != "" {
		pu.User = url.UserPassword(c.user, decisionsPassword)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}, Timeout: requestTimeout}
	req, err := http.NewRequest(http.MethodGet, c.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", c.ua)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rec, ok := waitRecord(auditPath, func(r *audit.Record) bool {
		return r.URL == c.url && r.User == c.user && r.Method == http.MethodGet && !strings.Contains(r.Note, "fetched to explain")
	})
	if !ok {
		t.Fatalf("proxy: no audit record for %s (status %d, decision header %q)", c.url, resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision"))
	}
	if h := resp.Header.Get("X-Robotsgate-Decision"); rec.Enforced && h != "" && h != rec.Decision {
		t.Errorf("proxy: X-Robotsgate-Decision %q, audit %q", h, rec.Decision)
	}
	return decisionSeen{decision: rec.Decision, rule: rec.Rule, line: rec.Line}
}

// waitRecord waits for the audit record that match accepts: the proxy
// writes it once the response has been sent, which the client may see first.
func waitRecord(path string, match func(*audit.Record) bool) (audit.Record, bool) {
	deadline := time.Now().Add(logTimeout)
	for {
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			var found *audit.Record
			for sc.Scan() {
				var r audit.Record
				if json.Unmarshal(sc.Bytes(), &r) == nil && match(&r) {
					found = &r
				}
			}
			f.Close()
			if found != nil {
				return *found, true
			}
		}
		if time.Now().After(deadline) {
			return audit.Record{}, false
		}
		time.Sleep(20 * time.Millisecond) // polling a file: no signal to wait on
	}
}

var checkRuleRE = regexp.MustCompile(`by "([^"]*)" \(line (\d+)`)

// checkDecision runs check -fetch as the client (its address and user).
func checkDecision(t *testing.T, dir, cfgPath string, c decisionCase) decisionSeen {
	t.Helper()
	args := []string{"check", "-config", cfgPath, "-client", "127.0.0.1", "-ua", c.ua, "-fetch"}
	if c.user != "" {
		args = append(args, "-user", c.user)
	}
	out, errOut, code := runBin(t, dir, append(args, c.url)...)
	verdict, _, ok := strings.Cut(out, " ")
	if !ok {
		t.Fatalf("check: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	seen := decisionSeen{decision: strings.ToLower(verdict), exit: code}
	first, _, _ := strings.Cut(out, "\n")
	if m := checkRuleRE.FindStringSubmatch(first); m != nil {
		seen.rule = m[1]
		seen.line, _ = strconv.Atoi(m[2])
	}
	return seen
}

// explainDecision asks the admin listener, as the client.
func explainDecision(t *testing.T, adminAddr string, c decisionCase) decisionSeen {
	t.Helper()
	q := url.Values{"url": {c.url}, "ua": {c.ua}, "client": {"127.0.0.1"}, "fetch": {"1"}}
	if c.user != "" {
		q.Set("user", c.user)
	}
	body := httpPost(t, "http://"+adminAddr+"/explain", q)
	var e admin.Explanation
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("/explain: %v\n%s", err, body)
	}
	return decisionSeen{decision: e.Decision, rule: e.Rule, line: e.Line}
}
