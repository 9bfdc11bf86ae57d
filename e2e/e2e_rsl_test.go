//go:build unix

package e2e

// End-to-end test of RSL 1.0 licences: the real binary between clients
// with purposes [train-ai] and [search], a client without purposes, sites
// on 127.0.0.2 that name their licences in robots.txt (License:), in a
// Link response header and in an HTML <link rel="license">, and a licence
// host on 127.0.0.3 that serves the RSL documents (one of them 503).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/internal/redistest"
	"github.com/robotsgate/robotsgate/report"
)

// The RSL documents the licence host serves.
const (
	// rslSite prohibits ai-train everywhere; /premium/ needs a licence
	// server and permits search and ai-input only.
	rslSite = `<?xml version="1.0" encoding="UTF-8"?>
<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/*">
    <license>
      <prohibits type="usage">ai-train</prohibits>
    </license>
  </content>
  <content url="/premium/*" server="https://licensing.example/api">
    <license>
      <permits type="usage">search, ai-input</permits>
    </license>
  </content>
</rsl>`
	// rslNoTrain is served by the Link header site (on its own origin).
	rslNoTrain = `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><prohibits type="usage">ai-all</prohibits></license></content></rsl>`
	// rslNoSearch is named by the <link> tag site.
	rslNoSearch = `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><prohibits type="usage">search</prohibits></license></content></rsl>`
)

// rslServer is an origin whose handler is given, recording "UA TARGET" of
// every request.
type rslServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func startRSLServer(t *testing.T, ip string, h func(w http.ResponseWriter, r *http.Request)) *rslServer {
	t.Helper()
	s := &rslServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.UserAgent()+" "+r.RequestURI)
		s.mu.Unlock()
		h(w, r)
	}))
	startAt(t, s.Server, ip, false)
	return s
}

// count is how many requests for target the server received.
func (s *rslServer) count(target string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if _, got := splitRequest(r); got == target {
			n++
		}
	}
	return n
}

// TestE2ERSL: each way a site names an RSL licence — a robots.txt License
// line, a Link response header, an HTML <link rel="license"> — refuses the
// purpose the licence prohibits (403 usage-denied naming the licence URL
// and the element that refused; for a response, nothing of its body
// delivered) and not the others; a <content server=…> gets 403
// license-required naming the server for a purpose it grants, unless the
// request carries a licence token of its own; a licence
// that answers 503, or whose host the egress guard refuses, is unknown: 503
// usage-unknown (usage.on_unknown: refuse) naming it. Each document is
// fetched once, archived by SHA-256 and named in the audit records; a
// client without purposes is never judged and never makes one fetched.
func TestE2ERSL(t *testing.T) {
	dir := t.TempDir()
	licences := startRSLServer(t, "127.0.0.3", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/site.xml":
			w.Header().Set("Content-Type", "application/rsl+xml")
			io.WriteString(w, rslSite)
		case "/nosearch.xml":
			w.Header().Set("Content-Type", "application/rsl+xml")
			io.WriteString(w, rslNoSearch)
		case "/down.xml":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	})
	byLine := startRSLServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprintf(w, "User-agent: *\nAllow: /\nLicense: %s/site.xml\n", licences.URL)
			return
		}
		io.WriteString(w, "page "+r.RequestURI)
	})
	byHeader := startRSLServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nAllow: /\n")
		case "/licence.xml":
			io.WriteString(w, rslNoTrain)
		default:
			w.Header().Add("Link", `</style.css>; rel=stylesheet, </licence.xml>; rel="license"; type="application/rsl+xml"`)
			io.WriteString(w, "page "+r.RequestURI)
		}
	})
	byTag := startRSLServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\n")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>t</title><link rel="license" type="application/rsl+xml" href="%s/nosearch.xml"></head><body>page %s</body></html>`,
			licences.URL, r.RequestURI)
	})
	unknown := startRSLServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprintf(w, "User-agent: *\nAllow: /\nLicense: %s/down.xml\n", licences.URL)
			return
		}
		io.WriteString(w, "page "+r.RequestURI)
	})
	denied := startRSLServer(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nAllow: /\nLicense: http://127.0.0.4:9/licence.xml\n") // outside egress.allow_networks
			return
		}
		io.WriteString(w, "page "+r.RequestURI)
	})

	cfg := e2eConfig{dir: dir, allowNetworks: "127.0.0.2/32, 127.0.0.3/32"}
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	auditPath, archiveDir := filepath.Join(dir, "audit.log"), filepath.Join(dir, "archive")
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, cfg.yaml()+fmt.Sprintf(`clients:
  - { user: plain, password_bcrypt: %[1]q }
  - { user: trainer, password_bcrypt: %[1]q, purposes: [train-ai] }
  - { user: searcher, password_bcrypt: %[1]q, purposes: [search] }
usage:
  scan_html: true
archive:
  dir: %[2]q
log:
  audit: %[3]q
`, hash, archiveDir, auditPath))
	p := startServe(t, dir, "-config", cfgPath)
	as := func(user string) *http.Client {
		c := proxyClient(t, p.addr, cfg.caPath())
		c.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword(user, "pw"), Host: p.addr})
		return c
	}
	plain, trainer, searcher := as("plain"), as("trainer"), as("searcher")

	pages := []string{byLine.URL + "/page", byLine.URL + "/premium/x", byHeader.URL + "/page", byTag.URL + "/page", unknown.URL + "/page", denied.URL + "/page"}
	for _, u := range pages {
		if r := tdmGet(t, plain, u, false); r.status != 200 || !strings.Contains(r.body, "page /") {
			t.Errorf("client without purposes, GET %s: %d %q", u, r.status, r.body)
		}
	}
	if n := len(licences.requests); n != 0 {
		t.Fatalf("a client without purposes made the licence host asked %d times", n)
	}

	type refusal struct {
		Decision       string
		Message        string
		LicenseURL     string `json:"license_url"`
		LicenseSource  string `json:"license_source"`
		LicenseElement string `json:"license_element"`
		LicenseServer  string `json:"license_server"`
		LicenseError   string `json:"license_error"`
	}
	refused := func(c *http.Client, u string, status int, decision string) refusal {
		t.Helper()
		r := tdmGet(t, c, u, true)
		var e refusal
		if err := json.Unmarshal([]byte(r.body), &e); err != nil || r.status != status || r.header.Get("X-Robotsgate-Decision") != decision {
			t.Errorf("GET %s: %d %s %q, want %d %s", u, r.status, r.header.Get("X-Robotsgate-Decision"), r.body, status, decision)
		}
		return e
	}
	allowed := func(c *http.Client, u string) {
		t.Helper()
		if r := tdmGet(t, c, u, false); r.status != 200 || !strings.Contains(r.body, "page /") {
			t.Errorf("GET %s: %d %q, want the page", u, r.status, r.body)
		}
	}

	// The License line: ai-train prohibited everywhere, search granted;
	// /premium/ grants search only with a licence server's token.
	e := refused(trainer, byLine.URL+"/page", 403, "usage-denied")
	if e.LicenseURL != licences.URL+"/site.xml" || e.LicenseSource != "robots.txt line 3" ||
		!strings.HasPrefix(e.LicenseElement, `<prohibits type="usage">ai-train</prohibits> (line 5) in <content url="/*">`) ||
		!strings.Contains(e.Message, "prohibits the purpose train-ai (RSL usage ai-train)") {
		t.Errorf("License line, train-ai: %+v", e)
	}
	allowed(searcher, byLine.URL+"/page")
	e = refused(searcher, byLine.URL+"/premium/x", 403, "license-required")
	if e.LicenseServer != "https://licensing.example/api" || !strings.Contains(e.Message, "licence server https://licensing.example/api") {
		t.Errorf("License line, search on /premium/: %+v", e)
	}
	tokenReq, _ := http.NewRequest(http.MethodGet, byLine.URL+"/premium/x", nil)
	tokenReq.Header.Set("Authorization", "License abc123")
	if resp, err := searcher.Do(tokenReq); err != nil || resp.StatusCode != 200 {
		t.Errorf("License line, search on /premium/ with a licence token of its own: %v %v, want 200", resp, err)
	} else {
		resp.Body.Close()
	}
	e = refused(trainer, byLine.URL+"/premium/x", 403, "usage-denied")
	if !strings.HasPrefix(e.LicenseElement, `<permits type="usage">search, ai-input</permits>`) || !strings.Contains(e.Message, "does not permit the purpose train-ai") {
		t.Errorf("License line, train-ai on /premium/: %+v", e)
	}

	// The Link header: ai-all refuses train-ai, the response withheld;
	// search gets the page.
	e = refused(trainer, byHeader.URL+"/page", 403, "usage-denied")
	if e.LicenseURL != byHeader.URL+"/licence.xml" || e.LicenseSource != "response header Link" ||
		!strings.HasPrefix(e.LicenseElement, `<prohibits type="usage">ai-all</prohibits>`) {
		t.Errorf("Link header, train-ai: %+v", e)
	}
	allowed(searcher, byHeader.URL+"/page")

	// The <link> tag: search refused, train-ai gets the page.
	e = refused(searcher, byTag.URL+"/page", 403, "usage-denied")
	if e.LicenseURL != licences.URL+"/nosearch.xml" || e.LicenseSource != `<link rel="license">` ||
		!strings.HasPrefix(e.LicenseElement, `<prohibits type="usage">search</prohibits>`) || strings.Contains(e.Message, "page /") {
		t.Errorf("<link> tag, search: %+v", e)
	}
	allowed(trainer, byTag.URL+"/page")

	// Unknown licences: 503, naming the document and why.
	e = refused(searcher, unknown.URL+"/page", 503, "usage-unknown")
	if e.LicenseURL != licences.URL+"/down.xml" || e.LicenseError != "http_5xx" || !strings.Contains(e.Message, "usage.on_unknown: refuse") {
		t.Errorf("licence answering 503: %+v", e)
	}
	e = refused(trainer, denied.URL+"/page", 503, "usage-unknown")
	if e.LicenseURL != "http://127.0.0.4:9/licence.xml" || e.LicenseError != "destination_ip_prohibited" {
		t.Errorf("licence on a host the egress guard refuses: %+v", e)
	}

	// Once per document, whatever the requests; the pages refused before
	// the request never reached their origins.
	for _, path := range []string{"/site.xml", "/nosearch.xml"} {
		if n := licences.count(path); n != 1 {
			t.Errorf("%s fetched %d times, want 1", path, n)
		}
	}
	if n := byHeader.count("/licence.xml"); n != 1 {
		t.Errorf("the Link header's licence fetched %d times, want 1", n)
	}
	if n := byLine.count("/premium/x"); n != 2 { // plain's and the searcher's with a token
		t.Errorf("the License line site's /premium/x was requested %d times, want 2", n)
	}
	if n := byLine.count("/page"); n != 2 { // plain's and searcher's
		t.Errorf("the License line site's /page was requested %d times, want 2", n)
	}

	// The audit log names the archived documents.
	p.stop(0)
	sums := map[string]string{
		licences.URL + "/site.xml": archive.Sum([]byte(rslSite)), byHeader.URL + "/licence.xml": archive.Sum([]byte(rslNoTrain)),
		licences.URL + "/nosearch.xml": archive.Sum([]byte(rslNoSearch)),
	}
	named := map[string]bool{}
	for _, rec := range readAudit(t, auditPath) {
		var sig *audit.UsageSignal
		for i := range rec.Usage {
			if strings.HasPrefix(rec.Usage[i].Signal, "rsl") {
				sig = &rec.Usage[i]
			}
		}
		switch {
		case rec.User == "plain" && sig != nil:
			t.Errorf("a record of the client without purposes lists an RSL licence: %+v", rec)
		case rec.Decision == "usage-denied" || rec.Decision == "license-required":
			if sig == nil || sig.Signal != "rsl" || sig.SHA256 != sums[sig.License] || sig.SHA256 == "" {
				t.Errorf("audit of %s %s: usage %+v", rec.Decision, rec.URL, rec.Usage)
				continue
			}
			named[sig.License] = true
			// /premium/ grants search and ai-input only with the server's
			// token, and refuses the rest: the record says which is which.
			if rec.Decision == "license-required" && (sig.Server == "" || !slices.Equal(sig.LicenseFor, []string{"search", "ai-input", "ai-use"})) {
				t.Errorf("audit of license-required %s: licence server %q needed for %q, want search, ai-input, ai-use", rec.URL, sig.Server, sig.LicenseFor)
			}
			if rec.URL == byHeader.URL+"/page" && (rec.UpstreamStatus != 200 || !strings.Contains(rec.Note, "was withheld")) {
				t.Errorf("audit of the withheld response: %+v", rec)
			}
		case rec.Decision == "usage-unknown":
			if sig == nil || sig.Signal != "rsl-unknown" || sig.License == "" || rec.Status != 503 {
				t.Errorf("audit of usage-unknown: %+v", rec)
			}
		}
	}
	// The report counts the refusals by licence, and has the documents
	// in its appendix.
	stdout, stderr, code := runBin(t, dir, "report", "-config", cfgPath, "-format", "json")
	var rep report.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil {
		t.Fatalf("report -format json: exit %d, stderr %s", code, stderr)
	}
	type row struct {
		where    string
		answered bool
		count    int64
	}
	rows := map[string]row{} // by licence URL and server
	for _, o := range rep.Origins {
		for _, s := range o.RefusedBySignal {
			if s.Signal == "rsl" {
				if s.LicenseSHA256 != sums[s.License] {
					t.Errorf("report row %+v: not the archived licence", s)
				}
				r := rows[s.License+" "+s.Server]
				rows[s.License+" "+s.Server] = row{s.Where, s.OriginAnswered, r.count + s.Count}
				if s.Server != "" && !slices.Equal(s.LicenseFor, []string{"search", "ai-input", "ai-use"}) {
					t.Errorf("report row %+v: a licence needed for %q, want search, ai-input, ai-use", s, s.LicenseFor)
				}
			}
		}
	}
	// /page: train-ai prohibited by the /* content; /premium/x: train-ai
	// not permitted and search needing the licence server, both by the
	// /premium/ content, which names the server.
	wantRows := map[string]row{
		licences.URL + "/site.xml ":                              {"robots.txt line 3", false, 1},
		licences.URL + "/site.xml https://licensing.example/api": {"robots.txt line 3", false, 2},
		byHeader.URL + "/licence.xml ":                           {"response header Link", true, 1},
		licences.URL + "/nosearch.xml ":                          {`<link rel="license">`, true, 1},
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("report refusals by RSL licence:\n%v\nwant\n%v", rows, wantRows)
	}
	kinds := map[string]string{}
	for _, b := range rep.Bodies {
		kinds[b.SHA256] = b.Kind
	}
	for u, sum := range sums {
		if kinds[sum] != "RSL licence" {
			t.Errorf("the report's appendix lacks %s (%s): %v", u, sum, kinds)
		}
	}

	// check decides as the proxy did, and lists the licences.
	for _, tc := range []struct {
		purposes, url string
		code          int
		verdict, want string
	}{
		{"search", byTag.URL + "/page", 1, "USAGE-DENIED", "usage signal rsl \"<content url=\\\"/\\\"> (line 1)\" at <link rel=\"license\">: refuses search (RSL licence " + licences.URL + "/nosearch.xml)"},
		{"search", byLine.URL + "/premium/x", 1, "LICENSE-REQUIRED", "licence server https://licensing.example/api needed for search, ai-input, ai-use"},
		{"search", byLine.URL + "/page", 0, "ALLOW", "refuses train-ai, train-genai, ai-train, tdm (RSL licence " + licences.URL + "/site.xml)"},
	} {
		out, _, code := runBin(t, dir, "check", "-config", cfgPath, "-purposes", tc.purposes, "-fetch", tc.url)
		if code != tc.code || !strings.HasPrefix(out, tc.verdict) || !strings.Contains(out, tc.want) {
			t.Errorf("check -purposes %s %s: exit %d, want %d, %s and %q:\n%s", tc.purposes, tc.url, code, tc.code, tc.verdict, tc.want, out)
		}
	}

	// /explain decides as the proxy did, and lists the licences, also of a
	// response for a client without purposes.
	pe := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(pe.out.String())
	if m == nil {
		t.Fatalf("no admin address in the start-up log:\n%s", pe.out)
	}
	for _, tc := range []struct {
		query            url.Values
		decision, signal string
		licence          string
	}{
		{url.Values{"fetch": {"1"}, "purposes": {"search"}, "url": {byTag.URL + "/page"}}, "usage-denied", "rsl", licences.URL + "/nosearch.xml"},
		{url.Values{"purposes": {"search"}, "url": {byLine.URL + "/premium/x"}}, "license-required", "rsl", licences.URL + "/site.xml"},
		{url.Values{"fetch": {"1"}, "url": {byHeader.URL + "/page"}}, "allow", "rsl", byHeader.URL + "/licence.xml"},
		{url.Values{"purposes": {"ai-input"}, "url": {unknown.URL + "/page"}}, "usage-unknown", "rsl-unknown", licences.URL + "/down.xml"},
	} {
		var e admin.Explanation
		body := httpPost(t, "http://"+m[1]+"/explain", tc.query)
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Decision != tc.decision {
			t.Errorf("/explain %v: %v %s, want %s", tc.query, err, body, tc.decision)
			continue
		}
		found := false
		for _, s := range e.UsageSignals {
			found = found || s.Signal == tc.signal && s.License == tc.licence
		}
		if !found {
			t.Errorf("/explain %v does not list the %s licence %s: %s", tc.query, tc.signal, tc.licence, body)
		}
	}
	// An operator's refresh fetches the licences of the new robots.txt
	// again (each check above, a process of its own, fetched it too).
	before := licences.count("/site.xml")
	stdout, stderr, code = runBin(t, dir, "refresh", "-admin", "http://"+m[1], byLine.URL+"/page")
	if want := "RSL licence " + licences.URL + "/site.xml: ok (HTTP 200)"; code != 0 || !strings.Contains(stdout, want) || licences.count("/site.xml") != before+1 {
		t.Errorf("refresh: exit %d, %d fetches of the licence (want %d), want %q in:\n%s%s", code, licences.count("/site.xml"), before+1, want, stdout, stderr)
	}
	pe.stop(0)

	for u, sum := range sums {
		if !named[u] {
			t.Errorf("no refusal's audit record names %s", u)
		}
		body, err := archive.ReadBody(archiveDir, sum)
		if err != nil || archive.Sum(body) != sum {
			t.Errorf("archived %s: %q %v", u, body, err)
		}
	}
}

// TestE2EFleetSharesAnRSLLicence: two instances on one Redis; the licence
// one fetched for a client with purposes serves the other, which refuses
// the prohibited purpose without fetching the document again.
func TestE2EFleetSharesAnRSLLicence(t *testing.T) {
	redis := redistest.Start(t)
	o := startRSLServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nAllow: /\nLicense: /licence.xml\nLicense: "+"http://"+r.Host+"/licence.xml\n")
		case "/licence.xml":
			io.WriteString(w, rslNoSearch)
		default:
			io.WriteString(w, "page "+r.RequestURI)
		}
	})
	dir := t.TempDir()
	cfg := fleetConfig(t, dir, redis.Addr, "refuse")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "clients:\n  - { cidr: 127.0.0.1/32, purposes: [search] }\n")
	f.Close()
	for i, p := range []*proc{startServe(t, t.TempDir(), "-config", cfg), startServe(t, t.TempDir(), "-config", cfg)} {
		r := tdmGet(t, proxyClient(t, p.addr, ""), o.URL+"/page", false)
		if r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "usage-denied" || !strings.Contains(r.body, o.URL+"/licence.xml") {
			t.Errorf("instance %d: %d %s %q, want 403 usage-denied naming the licence", i, r.status, r.header.Get("X-Robotsgate-Decision"), r.body)
		}
	}
	if n := o.count("/licence.xml"); n != 1 {
		t.Errorf("the fleet fetched the licence %d times, want once", n)
	}
	if n := o.count("/page"); n != 0 {
		t.Errorf("the refused page reached the origin %d times", n)
	}
}
