//go:build unix

package e2e

// End-to-end test of robotsgate report: a crawl through the real binary,
// then the report of its audit log and archive, its figures checked from
// the JSON and its HTML rendered in headless Chromium.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/report"
)

// The robots.txt files of the report's crawl. The paced origin asks
// ResearchBot (the * group) for 0.5 s between requests and FooBot for 1 s;
// the site changes from v1 to v2 during the crawl (a comment moves the
// rules down a line, so each version's lines are its own).
const (
	reportPacedRobots = "User-agent: *\nCrawl-delay: 0.5\nDisallow: /private\n\n" +
		"User-agent: FooBot\nCrawl-delay: 1\nDisallow: /private\n"
	reportSiteV1 = "User-agent: *\nDisallow: /private\nDisallow: /tmp/\n"
	reportSiteV2 = "# version 2: drafts are private too\nUser-agent: *\nDisallow: /private\nDisallow: /drafts\n"
)

// reportOrigin is an origin on a loopback address of its own whose
// robots.txt the test may change; with maxAge > 0 it sends Cache-Control:
// max-age and an ETag, and answers If-None-Match with 304 while the file
// is unchanged.
type reportOrigin struct {
	*httptest.Server
	mu     sync.Mutex
	robots string
	maxAge int
}

func startReportOrigin(t *testing.T, ip, robots string, maxAge int) *reportOrigin {
	t.Helper()
	o := &reportOrigin{robots: robots, maxAge: maxAge}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			io.WriteString(w, "page "+r.RequestURI)
			return
		}
		o.mu.Lock()
		body := o.robots
		o.mu.Unlock()
		if o.maxAge > 0 {
			etag := `"` + archive.Sum([]byte(body))[:16] + `"`
			w.Header().Set("Cache-Control", "max-age="+strconv.Itoa(o.maxAge))
			w.Header().Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, body)
	})
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	o.Server = httptest.NewUnstartedServer(h)
	o.Server.Listener.Close()
	o.Server.Listener = ln
	o.Server.Start()
	t.Cleanup(o.Server.Close)
	return o
}

func (o *reportOrigin) setRobots(body string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.robots = body
}

// reportRefusal is a rule that refused requests, as the refusals said it
// (their JSON explanation).
type reportRefusal struct {
	origin, rule string
	line         int
}

// reportCrawl sends requests through the proxy and keeps what came back.
type reportCrawl struct {
	t      *testing.T
	client *http.Client

	mu      sync.Mutex
	sent    map[string]int // per origin
	allowed map[string]int
	refused map[reportRefusal]int
}

// get sends GET rawURL as ua and returns the status (0 on a transport
// error, reported); a refusal's rule is tallied from its explanation
// (Accept: application/json). It may run on any goroutine.
func (c *reportCrawl) get(rawURL, ua string) int {
	c.t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		c.t.Error(err)
		return 0
	}
	req.Header.Set("User-Agent", ua)
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Errorf("GET %s through the proxy: %v", rawURL, err)
		return 0
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	origin := rawURL[:strings.Index(rawURL[len("http://"):], "/")+len("http://")]
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[origin]++
	switch resp.StatusCode {
	case http.StatusOK:
		c.allowed[origin]++
	case http.StatusForbidden:
		var e struct {
			Decision, Rule string
			Line           int
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Decision != "disallow" || e.Rule == "" {
			c.t.Errorf("GET %s: 403 without a robots.txt rule (%v): %s", rawURL, err, body)
		}
		c.refused[reportRefusal{origin, e.Rule, e.Line}]++
	default:
		c.t.Errorf("GET %s: status %d: %s", rawURL, resp.StatusCode, body)
	}
	return resp.StatusCode
}

// TestE2EReport crawls two local origins through the real binary: one
// asks for a Crawl-delay (0.5 s for ResearchBot, 1 s for FooBot) and gets
// bursts of concurrent requests, which the proxy holds; the other
// disallows paths and changes its robots.txt during the crawl (max-age=1,
// robots.min_ttl 1s), after a 304 revalidation. Then robotsgate report:
//   - -format json: the totals are the requests sent; each origin's
//     refusals by rule are those the clients were told (rule, line) and
//     name the version that has that rule on that line; both versions of
//     the site are listed with their fetches (a 304 among them); on the
//     paced origin every gap between forwarded requests of a group is at
//     least the interval asked (0 below it), the smallest is reported
//     against 0.5 s and 1 s, and the longest hold covers the burst;
//   - the HTML refers to nothing outside itself (no src or href but
//     anchors, no CSS url()) and loads in headless Chromium with every
//     request of the browser sent to a recording proxy, which receives
//     none (TestChromiumSeesPageRequests shows it would receive them); a
//     screenshot at 1280 px is kept where ROBOTSGATE_REPORT_SCREENSHOT
//     says, the HTML where ROBOTSGATE_REPORT_HTML says.
func TestE2EReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	paced := startReportOrigin(t, "127.0.0.3", reportPacedRobots, 0)
	site := startReportOrigin(t, "127.0.0.4", reportSiteV1, 1)

	auditPath := filepath.Join(dir, "audit.log")
	archiveDir := filepath.Join(dir, "robots-archive")
	cfgPath := filepath.Join(dir, "report.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`# written by TestE2EReport
listen: 127.0.0.1:0
admin_listen: ""
robots:
  fetch_user_agent: %q
  fetch_timeout: 5s
  min_ttl: 1s
egress:
  allow_networks: [127.0.0.0/8]
mitm:
  ca_cert: %q
  ca_key: %q
archive:
  dir: %q
log:
  audit: %q
`, e2eFetchUA, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), archiveDir, auditPath))
	p := startServe(t, dir, "-config", cfgPath)
	c := &reportCrawl{t: t, client: proxyClient(t, p.addr, ""), sent: map[string]int{}, allowed: map[string]int{}, refused: map[reportRefusal]int{}}
	const research, foo = "ResearchBot/1.0 (+https://research.example/bot)", "FooBot/2.0"

	// The site, version 1.
	c.get(site.URL+"/public/1", research)
	c.get(site.URL+"/private/a", research)
	c.get(site.URL+"/private/b", research)
	c.get(site.URL+"/tmp/x", research)

	// The paced origin: one request, then bursts of ResearchBot and
	// FooBot together, each held for its slot (and a refusal, never held).
	c.get(paced.URL+"/warm-up", research)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() { c.get(fmt.Sprintf("%s/articles/%d", paced.URL, i), research) })
	}
	for i := range 2 {
		wg.Go(func() { c.get(fmt.Sprintf("%s/foo/%d", paced.URL, i), foo) })
	}
	wg.Go(func() { c.get(paced.URL+"/private/x", research) })
	wg.Wait()

	// The site again once its copy is stale: a 304 revalidation (polled
	// in the fetch log, written off the request path), then version 2
	// (polled through the proxy: refreshed in the background).
	poll := func(what string, done func(i int) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; !done(i); i++ {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s; fetch logs:\n%s", what, reportFetchLines(t, archiveDir))
			}
			<-tick.C
		}
	}
	poll("a 304 revalidation of the site's robots.txt", func(i int) bool {
		c.get(fmt.Sprintf("%s/public/poll-%d", site.URL, i), research)
		return reportFetchLogHas(t, archiveDir, site.URL, http.StatusNotModified)
	})
	site.setRobots(reportSiteV2)
	poll("the site's version 2 in force", func(i int) bool {
		return c.get(fmt.Sprintf("%s/drafts/poll-%d", site.URL, i), research) == http.StatusForbidden
	})
	c.get(site.URL+"/private/c", research)
	c.get(site.URL+"/drafts/d", research)
	c.get(site.URL+"/tmp/y", research) // allowed by v2
	c.get(site.URL+"/public/2", research)
	p.stop(0) // SIGTERM drains: every audit line and archive record is written

	// The figures, from the JSON.
	stdout, stderr, code := runBin(t, dir, "report", "-format", "json", "-audit", auditPath, "-archive", archiveDir)
	if code != 0 {
		t.Fatalf("report -format json: exit %d, stderr:\n%s", code, stderr)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report -format json: %v:\n%s", err, stdout)
	}
	sent, allowed, refused := 0, 0, 0
	for o, n := range c.sent {
		sent, allowed = sent+n, allowed+c.allowed[o]
	}
	for _, n := range c.refused {
		refused += n
	}
	if r.Records != int64(sent) || r.Totals.Allowed != int64(allowed) || r.Totals.Refused != int64(refused) || r.Totals.Other != 0 {
		t.Errorf("report: %d records, totals %+v; the test sent %d requests, %d allowed, %d refused", r.Records, r.Totals, sent, allowed, refused)
	}
	origins := map[string]report.Origin{}
	for _, o := range r.Origins {
		origins[o.Origin] = o
	}
	versions := map[string]string{ // SHA-256 -> text
		archive.Sum([]byte(reportPacedRobots)): reportPacedRobots,
		archive.Sum([]byte(reportSiteV1)):      reportSiteV1,
		archive.Sum([]byte(reportSiteV2)):      reportSiteV2,
	}
	for _, u := range []string{paced.URL, site.URL} {
		o, ok := origins[u]
		if !ok {
			t.Fatalf("the report has no origin %s: %v", u, stdout)
		}
		if o.Requests != int64(c.sent[u]) || o.Allowed != int64(c.allowed[u]) {
			t.Errorf("%s: %d requests, %d allowed; the test sent %d, %d allowed", u, o.Requests, o.Allowed, c.sent[u], c.allowed[u])
		}
		// Refusals by rule: those the clients were told, each naming the
		// version with that rule on that line.
		got := map[reportRefusal]int{}
		for _, rc := range o.RefusedByRule {
			got[reportRefusal{u, rc.Rule, rc.Line}] += int(rc.Count)
			lines := strings.Split(versions[rc.SHA256], "\n")
			if rc.Line < 1 || rc.Line > len(lines) || lines[rc.Line-1] != rc.Rule {
				t.Errorf("%s: %q (line %d) refused %d requests, but robots.txt %.12s does not have it on that line:\n%s",
					u, rc.Rule, rc.Line, rc.Count, rc.SHA256, versions[rc.SHA256])
			}
		}
		for k, n := range c.refused {
			if k.origin == u && got[k] != n {
				t.Errorf("%s: %q (line %d): the report counts %d refusals, the clients got %d", u, k.rule, k.line, got[k], n)
			}
			delete(got, k)
		}
		for k, n := range got {
			t.Errorf("%s: the report counts %d refusals by %q (line %d) that no client got", u, n, k.rule, k.line)
		}
	}

	// The site's two versions, each fetched (v1 also revalidated).
	s := origins[site.URL]
	if len(s.Versions) != 2 || s.Versions[0].SHA256 != archive.Sum([]byte(reportSiteV1)) || s.Versions[1].SHA256 != archive.Sum([]byte(reportSiteV2)) ||
		s.Versions[0].Revalidations == 0 || s.Versions[0].HTTPStatus != 200 || s.Versions[1].HTTPStatus != 200 ||
		!s.Versions[0].InArchive || !s.Versions[1].InArchive || s.Versions[0].Records == 0 || s.Versions[1].Records == 0 {
		t.Errorf("the site's robots.txt versions: %+v; want v1 (fetched 200, revalidated 304) then v2, both archived and used", s.Versions)
	}

	// The paced origin: every gap at least the interval asked.
	o := origins[paced.URL]
	keys := map[string]report.PacingKey{}
	for _, k := range o.Pacing {
		keys[k.Group] = k
	}
	for _, want := range []struct {
		group  string
		asked  float64
		paced  int64
		minGap float64
	}{{"*", 0.5, 7, 0.5}, {"FooBot", 1, 2, 1}} {
		k, ok := keys[want.group]
		if !ok {
			t.Errorf("paced origin: no pacing key for group %q: %+v", want.group, o.Pacing)
			continue
		}
		if k.Paced != want.paced || k.Gaps != want.paced-1 || k.BelowAsked != 0 || k.Late != 0 || k.AskedUnknown != 0 {
			t.Errorf("group %s: %d paced, %d gaps, %d below the interval, %d late, %d unknown; want %d, %d, 0, 0, 0",
				want.group, k.Paced, k.Gaps, k.BelowAsked, k.Late, k.AskedUnknown, want.paced, want.paced-1)
		}
		if len(k.Asked) != 1 || k.Asked[0].CrawlDelaySeconds != want.asked || k.Asked[0].IntervalSeconds != want.asked {
			t.Errorf("group %s: asked %+v, want a Crawl-delay of %v s", want.group, k.Asked, want.asked)
		}
		if k.MinGapSeconds == nil || *k.MinGapSeconds < want.minGap || *k.MinGapAskedSeconds != want.asked || *k.MinRatio < 1 {
			t.Errorf("group %s: smallest gap %v s (asked %v s, ratio %v), want at least %v s", want.group,
				deref(k.MinGapSeconds), deref(k.MinGapAskedSeconds), deref(k.MinRatio), want.minGap)
		}
		t.Logf("group %s: %d gaps, smallest %.4f s (×%.4f of %v s), longest hold %.0f ms", want.group, k.Gaps,
			deref(k.MinGapSeconds), deref(k.MinRatio), want.asked, k.LongestHoldMS)
	}
	// Six ResearchBot requests behind the warm-up: the last waits about
	// 3 s (six intervals, less the time the burst took to arrive).
	if o.LongestHoldMS < 2000 || keys["*"].LongestHoldMS != o.LongestHoldMS {
		t.Errorf("paced origin: longest hold %v ms (group * %v ms), want the burst's, over 2 s", o.LongestHoldMS, keys["*"].LongestHoldMS)
	}
	if r.Pacing.BelowAsked != 0 || r.Pacing.Gaps != 7 || len(r.Notes) != 0 {
		t.Errorf("summary %+v, notes %q; want 7 gaps, none below the interval, no notes", r.Pacing, r.Notes)
	}

	// The HTML: self-contained, and it loads without a request.
	htmlPath := filepath.Join(dir, "report.html")
	if _, stderr, code := runBin(t, dir, "report", "-audit", auditPath, "-archive", archiveDir, "-o", htmlPath); code != 0 ||
		!strings.Contains(stderr, "report.html written") {
		t.Fatalf("report -o report.html: exit %d, stderr:\n%s", code, stderr)
	}
	page := readText(t, htmlPath)
	if refs := reportExternalRefs(page); len(refs) > 0 {
		t.Errorf("the HTML refers to resources outside it: %q", refs)
	}
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("the HTML has a script")
	}
	dom, requests := chromiumReport(t, htmlPath, "--dump-dom")
	if len(requests) > 0 {
		t.Errorf("loading the report, the page made requests: %q", requests)
	}
	for _, want := range []string{
		`id="origin-1"`, `id="origin-2"`, "<svg", `id="robots-` + archive.Sum([]byte(reportSiteV2)) + `-L4"`,
		"# version 2: drafts are private too", "every one of the 7 gaps", "Disallow: /drafts",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page as Chromium built it lacks %q", want)
		}
	}
	shot := filepath.Join(dir, "report-1280.png")
	if _, requests := chromiumReport(t, htmlPath, "--window-size=1280,2400", "--hide-scrollbars", "--force-device-scale-factor=1", "--screenshot="+shot); len(requests) > 0 {
		t.Errorf("taking the screenshot, the page made requests: %q", requests)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
	for env, file := range map[string]string{"ROBOTSGATE_REPORT_SCREENSHOT": shot, "ROBOTSGATE_REPORT_HTML": htmlPath} {
		if path := os.Getenv(env); path != "" {
			if err := os.WriteFile(path, []byte(readText(t, file)), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
}

func deref(f *float64) float64 {
	if f == nil {
		return math.NaN()
	}
	return *f
}

// chromiumReport opens the file in Debian's headless Chromium with args,
// every request of the browser sent to a proxy of the test's (loopback
// included), and returns Chromium's standard output and the requests the
// page made: those the proxy received, but for the browser's own (see
// chromiumOwnRequest).
func chromiumReport(t *testing.T, file string, args ...string) (stdout string, requests []string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (make test installs Debian's chromium)")
	}
	var mu sync.Mutex
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if req := r.Method + " " + r.RequestURI; !chromiumOwnRequest(req) {
			requests = append(requests, req)
		}
		mu.Unlock()
		http.Error(w, "no network for the report", http.StatusForbidden)
	}))
	defer recorder.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
		"--proxy-server=" + recorder.URL, "--proxy-bypass-list=<-loopback>"}
	cmd := exec.CommandContext(ctx, chromium, append(append(flags, args...), "file://"+file)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %q: %v\n%s", args, err, stderr.String())
	}
	recorder.Close() // waits for requests in progress
	mu.Lock()
	defer mu.Unlock()
	return string(out), requests
}

// chromiumOwnRequest reports whether a request is one Debian's Chromium
// makes on its own, whatever page it shows and despite
// --disable-background-networking and --disable-component-update: its
// component updater, its network clock and its account check. Only these
// exact endpoints are the browser's; anything else is the page's.
func chromiumOwnRequest(req string) bool {
	switch {
	case req == "CONNECT update.googleapis.com:443", req == "CONNECT accounts.google.com:443",
		strings.HasPrefix(req, "POST http://update.googleapis.com/service/update2/json?"),
		strings.HasPrefix(req, "GET http://clients2.google.com/time/1/current?"):
		return true
	}
	return false
}

// TestChromiumSeesPageRequests is the control of the check that the
// report loads without a request: a page that does load resources over
// the network (an image, a stylesheet, a font in CSS) makes requests the
// recording proxy receives, over http and https alike.
func TestChromiumSeesPageRequests(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "page.html")
	writeFile(t, file, `<!doctype html><html><head><link rel="stylesheet" href="https://fonts.example/css">
<style>@font-face{font-family:x;src:url(http://fonts.example/x.woff2)} body{font-family:x}</style></head>
<body><p>text</p><img src="http://images.example/pixel.png"></body></html>`)
	_, requests := chromiumReport(t, file, "--dump-dom")
	for _, want := range []string{"CONNECT fonts.example:443", "GET http://images.example/pixel.png", "GET http://fonts.example/x.woff2"} {
		found := false
		for _, r := range requests {
			found = found || r == want
		}
		if !found {
			t.Errorf("the recording proxy did not receive %q; it received %q", want, requests)
		}
	}
}

var (
	reportTagRE  = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	reportAttrRE = regexp.MustCompile(`(?i)\s(?:src|href|action|srcset|poster|data|xlink:href|background|formaction|ping|manifest)\s*=\s*["']?([^"'\s>]*)`)
	reportCSSRE  = regexp.MustCompile(`(?i)url\(|@import`)
)

// reportExternalRefs returns the references of a page to anything but
// itself: attributes of its tags that name a resource other than an
// anchor in it, and CSS that loads one. Text (escaped: the robots.txt
// files, the URLs) is not looked at.
func reportExternalRefs(page string) []string {
	var out []string
	for _, tag := range reportTagRE.FindAllString(page, -1) {
		for _, m := range reportAttrRE.FindAllStringSubmatch(tag, -1) {
			if !strings.HasPrefix(m[1], "#") {
				out = append(out, m[0])
			}
		}
	}
	if i, j := strings.Index(page, "<style>"), strings.Index(page, "</style>"); i >= 0 && j > i {
		out = append(out, reportCSSRE.FindAllString(page[i:j], -1)...)
	}
	return out
}

// reportFetches reads the archive's fetch logs, skipping a line still
// being written.
func reportFetches(t *testing.T, dir string) []archive.Fetch {
	t.Helper()
	logs, err := archive.FetchLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []archive.Fetch
	for _, name := range logs {
		for _, line := range strings.Split(readText(t, name), "\n") {
			var f archive.Fetch
			if json.Unmarshal([]byte(line), &f) == nil {
				out = append(out, f)
			}
		}
	}
	return out
}

func reportFetchLogHas(t *testing.T, dir, origin string, status int) bool {
	t.Helper()
	for _, f := range reportFetches(t, dir) {
		if f.Origin == origin && f.HTTPStatus == status {
			return true
		}
	}
	return false
}

func reportFetchLines(t *testing.T, dir string) string {
	var b strings.Builder
	for _, f := range reportFetches(t, dir) {
		fmt.Fprintf(&b, "%s %s %d %s %.12s\n", f.Time.Format(time.RFC3339Nano), f.Origin, f.HTTPStatus, f.Outcome, f.SHA256)
	}
	return b.String()
}

// TestE2EReportCLI: report's flags and exit statuses on the real binary.
//
//	robotsgate report                                   (3: no audit log)
//	robotsgate report -audit a.log -since soon          (3)
//	robotsgate report -audit a.log -format pdf          (3)
//	robotsgate report -audit missing.log -archive ""    (2, naming it)
//	robotsgate report -audit a.log                      (2: no robotsgate-state/archive here)
//	robotsgate report -audit a.log b.log -archive "" -since 2026-03-02 -until 2026-03-02 -format json
//	robotsgate report -audit a.log -archive ""          (HTML on standard output)
func TestE2EReportCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	day := func(d, h, m int) string {
		return time.Date(2026, 3, d, h, m, 59, 900_000_000, time.UTC).Format(time.RFC3339Nano)
	}
	line := func(at, url, decision string) string {
		return fmt.Sprintf(`{"time":%q,"client":"10.0.0.1:5000","mode":"enforce","agent":"Bot","group":"*","method":"GET","url":%q,"decision":%q,"enforced":true}`+"\n", at, url, decision)
	}
	writeFile(t, filepath.Join(dir, "a.log"), line(day(1, 23, 59), "http://a.example/1", "allow")+line(day(2, 0, 0), "http://a.example/2", "allow"))
	writeFile(t, filepath.Join(dir, "b.log"), line(day(2, 23, 59), "http://b.example/x", "disallow")+line(day(3, 0, 0), "http://b.example/y", "allow"))

	for _, c := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"report"}, 3, "no audit log"},
		{[]string{"report", "-audit", "a.log", "-since", "soon"}, 3, `-since: "soon" is neither an RFC 3339 time`},
		{[]string{"report", "-audit", "a.log", "-since", "2026-03-02", "-until", "2026-03-01"}, 3, "-until is before -since"},
		{[]string{"report", "-audit", "a.log", "-format", "pdf"}, 3, `-format "pdf": want html or json`},
		{[]string{"report", "-audit", "missing.log", "-archive", "none"}, 2, "missing.log"},
		{[]string{"report", "-audit", "a.log"}, 2, "archive robotsgate-state/archive: not a directory"},
	} {
		stdout, stderr, code := runBin(t, dir, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, stdout, stderr, c.code, c.want)
		}
	}

	// Dates: -since a day from its start, -until a day to its end; files
	// named with -audit and as arguments.
	// The logs are written by hand, without a chain: -legacy.
	stdout, stderr, code := runBin(t, dir, "report", "-legacy", "-audit", "a.log", "b.log", "-archive", "none", "-since", "2026-03-02", "-until", "2026-03-02", "-format", "json")
	var r report.Report
	if code != 0 {
		t.Fatalf("report -format json: exit %d, stderr %q", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report -format json: %v\n%s", err, stdout)
	}
	if r.Records != 2 || r.OutOfRange != 2 || r.First.Format(time.RFC3339Nano) != day(2, 0, 0) || r.Last.Format(time.RFC3339Nano) != day(2, 23, 59) ||
		r.Totals.Refused != 1 || len(r.Origins) != 2 || len(r.Notes) == 0 {
		t.Errorf("report of 2026-03-02: %d records (%d out of range) from %v to %v, totals %+v, %d origins, notes %q",
			r.Records, r.OutOfRange, r.First, r.Last, r.Totals, len(r.Origins), r.Notes)
	}

	stdout, _, code = runBin(t, dir, "report", "-legacy", "-audit", "a.log", "-archive", "none")
	if code != 0 || !strings.HasPrefix(stdout, "<!doctype html>") || !strings.HasSuffix(stdout, "</html>\n") {
		t.Errorf("report to standard output: exit %d, %.200q...", code, stdout)
	}
}
