package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/certs"
)

func startAdmin(t *testing.T, p *testProxy) string {
	t.Helper()
	srv := httptest.NewServer(p.srv.AdminHandler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func adminGet(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue returns the value of the sample with exactly these name and
// labels in a Prometheus text exposition, or "" if absent.
func metricValue(exposition, sample string) string {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`)
	if m := re.FindStringSubmatch(exposition); m != nil {
		return m[1]
	}
	return ""
}

func TestMetricsAfterRealTraffic(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	plain := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, o.Certificate()))
	adminURL := startAdmin(t, p)
	c := p.client()
	get(t, c, plain.URL+"/public")
	get(t, c, plain.URL+"/private/x")
	get(t, c, o.URL+"/public")
	down := startOrigin(t, "127.0.0.3", false, testRobots, 0)
	get(t, c, down.URL+"/up")
	down.Close()
	c.CloseIdleConnections()
	get(t, c, down.URL+"/down")

	_, m := adminGet(t, adminURL, "/metrics")
	for sample, want := range map[string]string{
		// /public twice, /up, and /down: allowed by robots.txt, then failed upstream
		`robotsgate_requests_total{decision="allow",method="GET"}`:    "4",
		`robotsgate_requests_total{decision="disallow",method="GET"}`: "1",
		`robotsgate_robots_fetches_total{outcome="ok"}`:               "3",
		`robotsgate_robots_fetch_duration_seconds_count`:              "3",
		`robotsgate_robots_cache_entries`:                             "3",
		`robotsgate_certificates_minted_total`:                        "1",
		`robotsgate_upstream_errors_total{kind="connection_refused"}`: "1",
	} {
		if got := metricValue(m, sample); got != want {
			t.Errorf("%s = %q, want %q", sample, got, want)
		}
	}
	for _, name := range []string{"robotsgate_robots_cache_hits_total", "robotsgate_robots_cache_misses_total", "robotsgate_pacing_wait_seconds_bucket"} {
		if !strings.Contains(m, name) {
			t.Errorf("%s missing", name)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	p := startProxy(t, testConfig(t, nil))
	adminURL := startAdmin(t, p)
	if code, body := adminGet(t, adminURL, "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz %d %q", code, body)
	}
	if code, _ := adminGet(t, adminURL, "/readyz"); code != 200 {
		t.Errorf("/readyz %d while serving", code)
	}
}

// Serving is the signal that Serve runs: not ready before it, ready once it
// is closed, not ready again after Shutdown.
func TestServingSignalsReadiness(t *testing.T) {
	ca, err := certs.GenerateCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(testConfig(t, nil), Options{CA: ca, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Serving():
		t.Fatal("Serving is closed before Serve")
	default:
	}
	if err := srv.Ready(t.Context()); err == nil || err.Error() != "not serving yet" {
		t.Errorf("Ready before Serve: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-srv.Serving():
	case err := <-done:
		t.Fatalf("Serve returned: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serving not closed within 10 s of Serve")
	}
	if err := srv.Ready(t.Context()); err != nil {
		t.Errorf("Ready once Serving is closed: %v", err)
	}
	srv.Shutdown(t.Context())
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := srv.Ready(t.Context()); err == nil {
		t.Error("ready after Shutdown")
	}
}

// TestExplainEqualsTheProxysDecision asks /explain about the same requests
// that go through the proxy and compares the answers.
func TestExplainEqualsTheProxysDecision(t *testing.T) {
	o := startOrigin(t, "127.0.0.2", false, testRobots+"Crawl-delay: 2\nContent-Usage: /foo-only train-ai=n\n", 0)
	p := startProxy(t, testConfig(t, nil))
	adminURL := startAdmin(t, p)
	for _, tt := range []struct{ target, ua string }{
		{"/public", "curl/8"},
		{"/private/x", "curl/8"},
		{"/private/ok", "curl/8"},
		{"/%70rivate", "curl/8"},
		{"/foo-only", "Mozilla/5.0 (compatible; FooBot/2.1)"},
		{"/private/x", "FooBot/2"},
		{"/robots.txt", "curl/8"},
	} {
		resp, _ := dialProxy(t, p).roundTrip(t, fmt.Sprintf("GET %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nAccept: application/json\r\n\r\n",
			o.URL, tt.target, strings.TrimPrefix(o.URL, "http://"), tt.ua))
		proxyDecision := resp.Header.Get("X-Robotsgate-Decision")
		if proxyDecision == "" {
			proxyDecision = "allow"
		}
		_, body := adminGet(t, adminURL, "/explain?url="+url.QueryEscape(o.URL+tt.target)+"&ua="+url.QueryEscape(tt.ua))
		var e admin.Explanation
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("explain: %v: %s", err, body)
		}
		if e.Decision != proxyDecision {
			t.Errorf("%s as %q: explain says %s, the proxy %s", tt.target, tt.ua, e.Decision, proxyDecision)
		}
		if proxyDecision == "disallow" && !strings.Contains(resp.Header.Get("Proxy-Status"), fmt.Sprintf("%s (line %d)", e.Rule, e.Line)) {
			t.Errorf("%s: explain's rule %q line %d, the proxy's %q", tt.target, e.Rule, e.Line, resp.Header.Get("Proxy-Status"))
		}
	}
	_, body := adminGet(t, adminURL, "/explain?url="+url.QueryEscape(o.URL+"/foo-only")+"&agent=FooBot")
	var e admin.Explanation
	json.Unmarshal([]byte(body), &e)
	if e.Group != "FooBot" || e.Rule != "Disallow: /foo-only" || e.Line != 6 || e.Robots == nil || e.Robots.Status != "ok" ||
		e.CrawlDelay != 2 || len(e.ContentUsage) != 1 || e.ContentUsage[0].Value != "n" {
		t.Errorf("explain for FooBot:\n%s", body)
	}
	_, body = adminGet(t, adminURL, "/explain?url="+url.QueryEscape(o.URL+"/public")+"&agent=FooBot")
	e = admin.Explanation{}
	json.Unmarshal([]byte(body), &e)
	if e.Decision != "allow" || e.Interval < 2 || e.NextSlot < 0 || e.PaceKey != o.URL+" FooBot" {
		t.Errorf("pacing in explain: interval %v next slot %v key %q", e.Interval, e.NextSlot, e.PaceKey)
	}
	if code, _ := adminGet(t, adminURL, "/explain"); code != http.StatusBadRequest {
		t.Errorf("/explain without url: %d", code)
	}
}

var auditKeys = []string{"time", "client", "user", "client_rule", "mode", "user_agent", "agent", "group", "method", "url",
	"decision", "enforced", "rule", "line", "canonical", "note", "robots_status", "robots_url", "wait_ms",
	"upstream_status", "status", "bytes", "duration_ms"}

func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line is not JSON: %v: %s", err, sc.Text())
		}
		if m["checkpoint"] != nil {
			continue // a signed checkpoint (one when the log is opened), no decision
		}
		for _, k := range auditKeys {
			if _, ok := m[k]; !ok {
				t.Errorf("audit line lacks %q: %s", k, sc.Text())
			}
		}
		out = append(out, m)
	}
	return out
}

func TestAuditLogOneLinePerDecisionAndReopen(t *testing.T) {
	o := startOrigin(t, "127.0.0.1", true, testRobots, 0)
	plain := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	cfg := testConfig(t, o.Certificate())
	logPath := filepath.Join(t.TempDir(), "audit.log")
	cfg.Log.Audit = logPath
	p := startProxy(t, cfg)
	c := p.client()
	get(t, c, plain.URL+"/public")
	get(t, c, plain.URL+"/private/x", "User-Agent", "TestBot/1")
	host := strings.TrimPrefix(o.URL, "https://")
	tc := dialProxy(t, p).connect(t, p, host, "127.0.0.1")
	tc.roundTrip(t, fmt.Sprintf("GET /a HTTP/1.1\r\nHost: %s\r\n\r\n", host))
	tc.roundTrip(t, fmt.Sprintf("GET /private/y HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host))

	lines := waitAudit(t, logPath, 5) // 2 plain, 2 in the tunnel, 1 CONNECT when the tunnel ends
	byURL := map[string]map[string]any{}
	for _, l := range lines {
		byURL[l["method"].(string)+" "+l["url"].(string)] = l
	}
	refused := byURL["GET "+plain.URL+"/private/x"]
	if refused == nil || refused["decision"] != "disallow" || refused["rule"] != "Disallow: /private" || refused["line"].(float64) != 2 ||
		refused["status"].(float64) != 403 || refused["upstream_status"].(float64) != 0 || refused["user_agent"] != "TestBot/1" {
		t.Errorf("refused request: %v", refused)
	}
	allowed := byURL["GET "+plain.URL+"/public"]
	if allowed == nil || allowed["decision"] != "allow" || allowed["upstream_status"].(float64) != 200 || allowed["bytes"].(float64) != float64(len("target=/public")) {
		t.Errorf("allowed request: %v", allowed)
	}
	if inner := byURL["GET "+o.URL+"/private/y"]; inner == nil || inner["decision"] != "disallow" {
		t.Errorf("request in tunnel: %v (have %v)", inner, keys(byURL))
	}

	// Rotation: move the file away, reopen, and the next line goes to a new file.
	os.Rename(logPath, logPath+".1")
	if err := p.srv.ReopenAudit(); err != nil {
		t.Fatal(err)
	}
	get(t, c, plain.URL+"/after-rotation")
	if got := waitAudit(t, logPath, 1); got[0]["url"] != plain.URL+"/after-rotation" {
		t.Errorf("new file: %v", got)
	}
	if old := readAudit(t, logPath+".1"); len(old) != 5 {
		t.Errorf("rotated file has %d lines, want 5", len(old))
	}
}

// waitAudit polls (bounded) until the log has n lines: the CONNECT line is
// written when the tunnel closes, after the client has its responses.
func waitAudit(t *testing.T, path string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines := readAudit(t, path)
		if len(lines) >= n || time.Now().After(deadline) {
			if len(lines) != n {
				t.Fatalf("audit log has %d lines, want %d", len(lines), n)
			}
			return lines
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestStatusPageInHeadlessChromium loads the status page in Debian's
// Chromium and checks what it shows.
func TestStatusPageInHeadlessChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (make test installs Debian's chromium)")
	}
	o := startOrigin(t, "127.0.0.2", false, testRobots, 0)
	p := startProxy(t, testConfig(t, nil))
	adminURL := startAdmin(t, p)
	c := p.client()
	get(t, c, o.URL+"/public")
	get(t, c, o.URL+"/private/secret-page")
	paced := startOrigin(t, "127.0.0.3", false, "User-agent: *\nCrawl-delay: 0.25\n", 0)
	get(t, c, paced.URL+"/one")
	get(t, c, paced.URL+"/two")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", adminURL+"/")
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	page := string(dom)
	for _, want := range []string{
		"<h1>robotsgate</h1>", o.URL, "/private/secret-page", "Disallow: /private (line 2)", "HTTPS interception",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	if !regexp.MustCompile(`<td>` + regexp.QuoteMeta(o.URL) + `</td><td class="num">2</td><td class="num">1</td>`).MatchString(page) {
		t.Errorf("busiest origins table does not show 2 requests, 1 refused:\n%s", page)
	}
	if !regexp.MustCompile(`<td>` + regexp.QuoteMeta(paced.URL) + `</td><td>250 ms</td><td class="num">0</td><td>[12]\d\d ms</td>`).MatchString(page) {
		t.Errorf("paced origins table does not show the 250 ms origin and its last wait:\n%s", page)
	}
}
