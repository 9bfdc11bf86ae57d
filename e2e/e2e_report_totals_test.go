//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/report"
)

// TestE2EReportTotalsAddUp: every way a new operator's traffic reaches the
// proxy, then the report: each total is the sum of its parts, whichever
// table it is read from. The traffic: plain HTTP on the proxy port (an
// allow and a disallow), an intercepted CONNECT (a tunnel with an allow
// and a disallow inside), a SOCKS5 tunnel of plain HTTP (a tunnel and its
// request, under the http:// origin it was judged as, not an https:// one
// with 0 requests), a client in monitor mode (a refusal only logged), an
// origin that answers 429 once (one pause: "1 time", not "1 times"), a
// CONNECT the egress guard refuses, and an operator's robotsgate refresh
// (counted apart, not as a request of an agent "refused before it was
// judged").
func TestE2EReportTotalsAddUp(t *testing.T) {
	t.Parallel()
	needTool(t, "curl")
	dir := t.TempDir()
	plain, tlsOrigin := startOrigin(t, false), startOrigin(t, true)
	tlsOrigin.writeCertPEM(t, filepath.Join(dir, "upstream.pem"))
	busy := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(n int64, w http.ResponseWriter) int {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	})
	cfg := strings.Replace(e2eConfig{dir: dir, upstreamCA: true}.yaml(), "admin_listen: \"\"\n", "admin_listen: 127.0.0.1:0\n", 1) +
		fmt.Sprintf("state_dir: %q\nsocks:\n  listen: 127.0.0.1:0\nclients:\n  - {cidr: 127.0.0.2/32, mode: monitor}\npacing:\n  max_wait: 0s\n",
			filepath.Join(dir, "state"))
	writeFile(t, filepath.Join(dir, "cfg.yaml"), cfg)
	p := startServe(t, dir, "-config", "cfg.yaml")
	p.waitLog("SOCKS5 on", 1) // printed after the proxy's address
	admin := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	socks := regexp.MustCompile(`SOCKS5 on (127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	if admin == nil || socks == nil {
		t.Fatalf("no admin or SOCKS5 address in:\n%s", p.out)
	}

	// Requests, and the statuses each must get.
	c := dialProxy(t, p.addr)
	for target, status := range map[string]int{"/public": 200, "/private/x": 403} {
		if r := c.get(plain.URL + target); r.status != status {
			t.Errorf("%s: %d, want %d", target, r.status, status)
		}
	}
	tc := proxyClient(t, p.addr, e2eConfig{dir: dir}.caPath())
	tc.Transport.(*http.Transport).MaxConnsPerHost = 1 // one tunnel for both
	for target, status := range map[string]int{"/public": 200, "/private/y": 403} {
		if r := get(t, tc, tlsOrigin.URL+target); r.status != status {
			t.Errorf("https %s: %d, want %d", target, r.status, status)
		}
	}
	if r := curl(t, cleanEnv(), "--socks5-hostname", socks[1], plain.URL+"/socks"); r.status != 200 {
		t.Errorf("SOCKS5 plain HTTP: %d (curl exit %d), want 200", r.status, r.code)
	}
	monitored := &http.Client{Transport: &http.Transport{
		Proxy:       http.ProxyURL(&url.URL{Scheme: "http", Host: p.addr}),
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: requestTimeout}).DialContext,
	}, Timeout: requestTimeout}
	t.Cleanup(monitored.CloseIdleConnections)
	if r := get(t, monitored, plain.URL+"/private/monitored"); r.status != 200 {
		t.Errorf("monitor mode: %d, want 200 (only logged)", r.status)
	}
	for i, status := range []int{429, 429} { // the origin's 429, then robotsgate's (origin-backoff)
		if r := c.get(busy.URL + "/busy"); r.status != status {
			t.Errorf("busy origin, request %d: %d, want %d", i+1, r.status, status)
		}
	}
	if r := c.connect("127.0.0.9:443"); r.status != 403 {
		t.Errorf("CONNECT to a refused network: %d, want 403", r.status)
	}
	if out, errOut, code := runBin(t, dir, "refresh", "-admin", "http://"+admin[1], plain.URL); code != 0 {
		t.Errorf("refresh: exit %d\n%s%s", code, out, errOut)
	}
	p.stop(0)

	out, errOut, code := runBin(t, dir, "report", "-config", "cfg.yaml", "-format", "json")
	var r report.Report
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("report -format json: exit %d, stderr %s\n%s", code, errOut, out)
	}
	checkTotalsAddUp(t, &r)
	// Allowed: /public twice, /socks and the first /busy (the origin's
	// 429 is its answer to an allowed request); refused: the two
	// disallows and origin-backoff; forwarded: the allowed ones and the
	// monitored one. Tunnels: the CONNECT and the SOCKS5 opening, both
	// judged request by request, and the CONNECT refused.
	wantTotals := report.Counts{Requests: 8, Allowed: 4, Forwarded: 5, Refused: 3, Monitored: 1,
		Tunnels: report.Tunnels{Intercepted: 2, Refused: 1}, Refreshes: 1}
	if r.Totals != wantTotals {
		t.Errorf("totals %+v, want %+v", r.Totals, wantTotals)
	}
	socksOrigin := plain.URL // the SOCKS5 tunnel's requests were judged as this origin
	for _, o := range r.Origins {
		if o.Requests == 0 && o.Tunnels.Total() > 0 && strings.HasPrefix(o.Origin, "https://"+strings.TrimPrefix(plain.URL, "http://")) {
			t.Errorf("the SOCKS5 tunnel of plain HTTP is listed as %s with 0 requests", o.Origin)
		}
		if o.Origin == socksOrigin && (o.Tunnels.Intercepted != 1 || o.Requests != 4 || o.Refreshes != 1) {
			t.Errorf("%s: %+v; want its 4 requests, the SOCKS5 tunnel that carried one, and the refresh", o.Origin, o.Counts)
		}
	}
	for _, a := range r.Agents {
		if a.Agent == "" {
			t.Errorf("an agent \"\" (refused before it was judged) with %d requests: %+v", a.Requests, r.Agents)
		}
	}

	htmlPath := filepath.Join(dir, "report.html")
	if out, errOut, code := runBin(t, dir, "report", "-config", "cfg.yaml", "-o", htmlPath); code != 0 {
		t.Fatalf("report -o: exit %d\n%s%s", code, out, errOut)
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if bad := regexp.MustCompile(`<b>1</b>(requests|times|origins|gaps|refusals)\b|\b1 (times|requests|tunnels|refreshes)\b`).Find(html); bad != nil {
		t.Errorf("the HTML report says %q", bad)
	}
	for _, want := range []string{"<b>1</b>time an origin asked to slow down", "1 refresh by an operator", "no: only logged (monitor mode), forwarded"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("the HTML report does not say %q", want)
		}
	}
}

// checkTotalsAddUp sums every table of a report against its totals.
func checkTotalsAddUp(t *testing.T, r *report.Report) {
	t.Helper()
	tot := r.Totals
	sum := func(name string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
	sum("allowed + refused + monitored + other", tot.Allowed+tot.Refused+tot.Monitored+tot.Other, tot.Requests)
	var decisions, clients, clientTunnels, agents, bins, origins, originTunnels, refreshes int64
	for _, d := range r.Decisions {
		decisions += d.Count
	}
	for _, c := range r.Clients {
		clients += c.Requests
		clientTunnels += c.Tunnels
	}
	for _, a := range r.Agents {
		agents += a.Requests
	}
	for _, b := range r.Timeline.Bins {
		bins += b.Allowed + b.Refused + b.Other
	}
	for _, o := range r.Origins {
		origins += o.Requests
		originTunnels += o.Tunnels.Total()
		refreshes += o.Refreshes
		var od int64
		for _, d := range o.Decisions {
			od += d.Count
		}
		sum(o.Origin+": decisions", od, o.Requests)
		sum(o.Origin+": allowed + refused + monitored + other", o.Allowed+o.Refused+o.Monitored+o.Other, o.Requests)
	}
	sum("decisions", decisions, tot.Requests)
	sum("clients' requests", clients+r.OtherClients, tot.Requests)
	sum("clients' tunnels", clientTunnels+r.OtherClientTunnels, tot.Tunnels.Total())
	sum("agents' requests", agents+r.OtherAgents, tot.Requests)
	sum("timeline", bins, tot.Requests)
	sum("origins' requests", origins, tot.Requests)
	sum("origins' tunnels", originTunnels, tot.Tunnels.Total())
	sum("origins' refreshes", refreshes, tot.Refreshes)
	sum("records", tot.Requests+tot.Tunnels.Total()+tot.Refreshes, r.Records)
}
