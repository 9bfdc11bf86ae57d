//go:build unix

package e2e

// A subset of the policy package's conformance tables (one per family of
// AI-usage signal) through the real binary: each case is a site of its own
// on 127.0.0.2, asked through the proxy by a client with purposes, and the
// proxy's decision is also what `check -fetch` and /explain?fetch=1 say.
// TestE2ESignalsNeverAllowWhatASiteProhibits holds the readings that let a
// train-ai client receive a page its site prohibits before this test was
// written (each fails on that code); TestE2ESignalsAsTheirTextsSay the
// rest, among them the former false refusals and a client that declares
// what RSL terms it meets.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/report"
)

// signalCase is one site and what a client gets from it.
type signalCase struct {
	name string
	// robots is the site's robots.txt ("" allows all); files its other
	// documents by path, {origin} and {port} filled in.
	robots string
	files  map[string]string
	// page is the response to /page: its fields (name, value, ...; the
	// value "-" sends none) and body; gzipped when the request accepts
	// gzip and gzipPage is set, "brotli" (bytes no scan reads) when it
	// accepts br and brPage is set, or whatever it accepts with brAlways.
	header                     []string
	body                       string
	gzipPage, brPage, brAlways bool
	// user is the proxy user asking (trainer: train-ai; searcher: search;
	// declared: train-ai with rsl_user, country and accept_payment);
	// acceptEncoding the client's Accept-Encoding.
	user           string
	acceptEncoding string
	// decision is what the proxy, check and /explain decide.
	decision string
}

// startSignalSite serves c on a port of its own.
func startSignalSite(t *testing.T, c *signalCase) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(nil)
	startAt(t, s, "127.0.0.2", false)
	port := s.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndexByte(port, ':')+1:]
	fill := strings.NewReplacer("{origin}", s.URL, "{port}", port).Replace
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			robots := c.robots
			if robots == "" {
				robots = "User-agent: *\nAllow: /\n"
			}
			io.WriteString(w, fill(robots))
		case c.files[r.URL.Path] != "":
			io.WriteString(w, fill(c.files[r.URL.Path]))
		case r.URL.Path == "/page":
			body := []byte(fill(c.body))
			for i := 0; i+1 < len(c.header); i += 2 {
				if c.header[i+1] == "-" {
					w.Header()[c.header[i]] = nil
					continue
				}
				w.Header().Add(c.header[i], fill(c.header[i+1]))
			}
			ae := r.Header.Get("Accept-Encoding")
			switch {
			case c.brAlways || c.brPage && strings.Contains(ae, "br"):
				w.Header().Set("Content-Encoding", "br")
				body = append([]byte("\x1b\x00\x00"), body...) // not brotli: no scan could read it
			case c.gzipPage && strings.Contains(ae, "gzip"):
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				zw.Write(body)
				zw.Close()
				w.Header().Set("Content-Encoding", "gzip")
				body = b.Bytes()
			}
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	})
	return s
}

// signalProxy is a robotsgate serve with an admin listener and the
// clients the cases ask as, and what asks it.
type signalProxy struct {
	dir, cfgPath, admin string
	p                   *proc
	cfg                 e2eConfig
}

func startSignalProxy(t *testing.T, declared bool) *signalProxy {
	t.Helper()
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := e2eConfig{dir: dir, allowNetworks: "127.0.0.2/32"}
	clients := fmt.Sprintf(`clients:
  - { user: trainer, password_bcrypt: %[1]q, purposes: [train-ai] }
  - { user: searcher, password_bcrypt: %[1]q, purposes: [search] }
`, hash)
	if declared {
		clients += fmt.Sprintf("  - { user: declared, password_bcrypt: %q, purposes: [train-ai], rsl_user: non-commercial, country: FR, accept_payment: [training] }\n", hash)
	}
	sp := &signalProxy{dir: dir, cfgPath: filepath.Join(dir, "cfg.yaml"), cfg: cfg}
	writeFile(t, sp.cfgPath, cfg.yaml()+clients+"usage:\n  scan_html: true\n")
	sp.p = startServe(t, dir, "-config", sp.cfgPath, "-admin-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(sp.p.out.String())
	if m == nil {
		t.Fatalf("no admin address in the start-up log:\n%s", sp.p.out)
	}
	sp.admin = m[1]
	return sp
}

// ask fetches u through the proxy as c's user and returns the decision
// (the X-Robotsgate-Decision of a refusal, "allow" for the origin's page),
// failing when a refused response carries the page.
func (sp *signalProxy) ask(t *testing.T, c *signalCase, u string) string {
	t.Helper()
	client := proxyClient(t, sp.p.addr, sp.cfg.caPath())
	client.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword(c.user, "pw"), Host: sp.p.addr})
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; ExampleBot/1.0)")
	if c.acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", c.acceptEncoding)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	d := resp.Header.Get("X-Robotsgate-Decision")
	if d == "" {
		d = "allow"
	}
	if d != "allow" && bytes.Contains(body, []byte("PAGE-BODY")) {
		t.Errorf("a %s refusal carries the page: %q", d, body)
	}
	if d != c.decision {
		t.Logf("proxy: %d %s %.300q", resp.StatusCode, d, body)
	}
	return d
}

// check is what `check -fetch` decides as c's user.
func (sp *signalProxy) check(t *testing.T, c *signalCase, u string) string {
	t.Helper()
	out, errOut, code := runBin(t, sp.dir, "check", "-config", sp.cfgPath, "-client", "127.0.0.1", "-user", c.user,
		"-ua", "Mozilla/5.0 (compatible; ExampleBot/1.0)", "-fetch", u)
	verdict, _, ok := strings.Cut(out, " ")
	if !ok {
		t.Fatalf("check: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	return strings.ToLower(verdict)
}

// explain is what /explain?fetch=1 decides as c's user.
func (sp *signalProxy) explain(t *testing.T, c *signalCase, u string) string {
	t.Helper()
	q := url.Values{"url": {u}, "ua": {"Mozilla/5.0 (compatible; ExampleBot/1.0)"}, "client": {"127.0.0.1"}, "user": {c.user}, "fetch": {"1"}}
	body := httpPost(t, "http://"+sp.admin+"/explain", q)
	var e admin.Explanation
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("/explain: %v\n%s", err, body)
	}
	return e.Decision
}

// runSignalCases runs each case through the proxy, check and /explain.
func runSignalCases(t *testing.T, declared bool, cases []signalCase) {
	sp := startSignalProxy(t, declared)
	for i := range cases {
		c := &cases[i]
		if c.user == "" {
			c.user = "trainer"
		}
		t.Run(c.name, func(t *testing.T) {
			u := startSignalSite(t, c).URL + "/page"
			if got := sp.ask(t, c, u); got != c.decision {
				t.Errorf("the proxy decides %s, want %s", got, c.decision)
			}
			if got := sp.check(t, c, u); got != c.decision {
				t.Errorf("check -fetch decides %s, want %s (as the proxy)", got, c.decision)
			}
			if got := sp.explain(t, c, u); got != c.decision {
				t.Errorf("/explain?fetch=1 decides %s, want %s (as the proxy)", got, c.decision)
			}
		})
	}
}

const (
	signalPage = "<!doctype html><html><head><title>PAGE-BODY</title>%s</head><body>PAGE-BODY</body></html>"
	rslDoc     = `<rsl xmlns="https://rslstandard.org/rsl"><content url="%s">%s</content></rsl>`
	byLicence  = "User-agent: *\nAllow: /\nLicense: {origin}/licence.xml\n"
)

func licence(url, licences string) map[string]string {
	return map[string]string{"/licence.xml": fmt.Sprintf(rslDoc, url, licences)}
}

// TestE2ESignalsNeverAllowWhatASiteProhibits: each reading that delivered
// a page its site prohibits to a train-ai client (a false allow) now
// refuses, through the real binary, with check and /explain agreeing.
func TestE2ESignalsNeverAllowWhatASiteProhibits(t *testing.T) {
	html := []string{"Content-Type", "text/html"}
	noai := fmt.Sprintf(signalPage, `<meta name="robots" content="noai">`)
	trainOK := `<license><permits type="usage">ai-train</permits></license>`
	runSignalCases(t, false, []signalCase{
		{name: "aipref vocab-07 §6.5.2 a parameter does not hide train-ai=n in robots.txt",
			robots: "User-agent: *\nAllow: /\nContent-Usage: /page train-ai=n;note=\"why\"\n", body: "PAGE-BODY", decision: "usage-denied"},
		{name: "RSL §3 (2nd-hand) a prohibition in one licence wins over another's permission", robots: byLicence,
			files: licence("/", trainOK+`<license><prohibits type="usage">ai-train</prohibits></license>`), body: "PAGE-BODY", decision: "usage-denied"},
		{name: "robotsgate RSL reading: an empty licence grants nothing", robots: byLicence,
			files: licence("/", `<license/>`), body: "PAGE-BODY", decision: "usage-denied"},
		{name: "robotsgate RSL reading: a licence of payment and legal terms only grants nothing", robots: byLicence,
			files: licence("/", `<license><payment type="free"/><legal type="disclaimer">as-is</legal></license>`), body: "PAGE-BODY", decision: "usage-denied"},
		{name: "RSL §3.4.1 (2nd-hand) permits type=user non-commercial: a client that declares none is refused", robots: byLicence,
			files: licence("/", `<license><permits type="usage">ai-train</permits><permits type="user">non-commercial</permits></license>`), body: "PAGE-BODY", decision: "usage-denied"},
		{name: "RSL §3.4.1 (2nd-hand) permits type=geo: a client that declares no country is refused", robots: byLicence,
			files: licence("/", `<license><permits type="usage">ai-train</permits><permits type="geo">FR</permits></license>`), body: "PAGE-BODY", decision: "usage-denied"},
		{name: "RSL §3.7 (2nd-hand) a training payment with an amount needs the client to accept it", robots: byLicence,
			files: licence("/", `<license><permits type="usage">ai-train</permits><payment type="training"><amount currency="USD">0.015</amount></payment></license>`),
			body:  "PAGE-BODY", decision: "license-required"},
		{name: "RSL §3.12 (2nd-hand) a reporting profile the client does not comply with", robots: byLicence,
			files: licence("/", `<license><permits type="usage">ai-train</permits><reporting type="audit" profile="https://reports.example/p"/></license>`),
			body:  "PAGE-BODY", decision: "license-required"},
		{name: "robotsgate: a <content url> naming the site by an IPv4 shorthand applies", robots: byLicence,
			files: licence("http://127.2:{port}/", `<license><prohibits type="usage">ai-train</prohibits></license>`), body: "PAGE-BODY", decision: "usage-denied"},
		{name: "robotsgate: a <content url> naming the site with a zero-padded port applies", robots: byLicence,
			files: licence("http://127.0.0.2:0{port}/", `<license><prohibits type="usage">ai-train</prohibits></license>`), body: "PAGE-BODY", decision: "usage-denied"},
		{name: "robotsgate scan_html: a client accepting br gets a page it asked gzip for, and its noai read", header: html, body: noai,
			gzipPage: true, brPage: true, acceptEncoding: "br, gzip", decision: "usage-denied"},
		{name: "robotsgate scan_html: a client accepting br only gets the page unencoded, and its noai read", header: html, body: noai,
			brPage: true, acceptEncoding: "br", decision: "usage-denied"},
		{name: "robotsgate scan_html: a br page sent unasked is unknown, not unread", header: html, body: noai,
			brAlways: true, acceptEncoding: "br", decision: "usage-unknown"},
		{name: "robotsgate scan_html: application/xhtml+xml is read", header: []string{"Content-Type", "application/xhtml+xml"}, body: noai, decision: "usage-denied"},
		{name: "robotsgate scan_html: a page without a Content-Type is read", header: []string{"Content-Type", "-"}, body: noai, decision: "usage-denied"},
		{name: "robotsgate scan_html: a head that does not end within 64 KiB is unknown", header: html,
			body: fmt.Sprintf(signalPage, "<script>"+strings.Repeat(" ", 64<<10)+`</script><meta name="robots" content="noai">`), decision: "usage-unknown"},
		{name: "TDMRep #sec-tdm-header + RFC 9110 §5.3 tdm-reservation 0, 1 in one line reserves as two lines do",
			header: []string{"tdm-reservation", "0, 1"}, body: "PAGE-BODY", decision: "usage-denied"},
	})
}

// TestE2ESignalsAsTheirTextsSay: the readings that refused what the texts
// allow now allow it, and a client that declares what it meets is granted;
// through the real binary, with check and /explain agreeing.
func TestE2ESignalsAsTheirTextsSay(t *testing.T) {
	html := []string{"Content-Type", "text/html"}
	noTrain := `<license><prohibits type="usage">ai-train</prohibits></license>`
	linked := []string{"Link", `</licence.xml>; rel="license"; type="application/rsl+xml"`}
	runSignalCases(t, true, []signalCase{
		{name: "aipref vocab-07 §6.5.1 the last value of a key applies",
			robots: "User-agent: *\nAllow: /\nContent-Usage: train-ai=n, train-ai=y\n", body: "PAGE-BODY", decision: "allow"},
		{name: "aipref vocab-07 §6.5.1 an upper-case key states no preference",
			header: []string{"Content-Usage", "Train-AI=n"}, body: "PAGE-BODY", decision: "allow"},
		{name: "aipref vocab-07 §6.5 a String is not the Token n",
			header: []string{"Content-Usage", `train-ai="n"`}, body: "PAGE-BODY", decision: "allow"},
		{name: "Content-Signal robotsgate, conservative: unparsable, naming ai-train with no, still refuses",
			header: []string{"Content-Signal", "AI-Train=No"}, body: "PAGE-BODY", decision: "usage-denied"},
		{name: "Robots-Tag repext-03 §3.1.1 a member for the agent refuses",
			header: []string{"Robots-Tag", "ExampleBot;noai"}, body: "PAGE-BODY", decision: "usage-denied"},
		{name: "TDMRep #sec-processing-priority a meta tag 0 supersedes a header 1", header: []string{"Content-Type", "text/html", "tdm-reservation", "1"},
			body: fmt.Sprintf(signalPage, `<meta name="tdm-reservation" content="0">`), decision: "allow"},
		{name: "RSL §4 (2nd-hand) url=\"\" in a Link header's licence is the page: train-ai refused", header: linked,
			files: licence("", noTrain), body: "PAGE-BODY", decision: "usage-denied"},
		{name: "RSL §4 (2nd-hand) url=\"\" in a Link header's licence is the page: search granted", header: linked, user: "searcher",
			files: licence("", noTrain), body: "PAGE-BODY", decision: "allow"},
		{name: "RSL §3 (2nd-hand) a licence of prohibitions only grants the others", robots: byLicence, user: "searcher",
			files: licence("/", noTrain), body: "PAGE-BODY", decision: "allow"},
		{name: "RSL §3.4.1 and §3.7 (2nd-hand) a client that declares its user type, country and payment meets them", robots: byLicence, user: "declared",
			files: licence("/", `<license><permits type="usage">ai-train</permits><permits type="user">non-commercial</permits><permits type="geo">EU</permits>`+
				`<payment type="training"><amount currency="USD">0.015</amount></payment></license>`),
			header: html, body: fmt.Sprintf(signalPage, ""), decision: "allow"},
		{name: "RSL §3.4.1 (2nd-hand) a user type the client is not is refused", robots: byLicence, user: "declared",
			files: licence("/", `<license><permits type="usage">ai-train</permits><permits type="user">education</permits></license>`), body: "PAGE-BODY", decision: "usage-denied"},
	})
}

// TestE2ERSLTermsAreShown: a licence term the client does not meet is named
// wherever the decision is: the refusal (license_term), the audit record
// (its note and the licence's terms), check, /explain and the report.
func TestE2ERSLTermsAreShown(t *testing.T) {
	c := &signalCase{robots: byLicence, user: "trainer", body: "PAGE-BODY", files: licence("/",
		`<license><permits type="usage">ai-train</permits><permits type="geo">FR DE</permits><payment type="training"><amount currency="EUR">0.02</amount></payment></license>`)}
	const term, terms = `<payment type="training"> (0.02 EUR)`, "license 1 (line 1): usage ai-train; geo fr de; payment training (0.02 EUR)"
	u := startSignalSite(t, c).URL + "/page"
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := e2eConfig{dir: dir, allowNetworks: "127.0.0.2/32"}
	auditPath, cfgPath := filepath.Join(dir, "audit.log"), filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, cfg.yaml()+fmt.Sprintf(`clients:
  - { user: trainer, password_bcrypt: %q, purposes: [train-ai], country: FR }
archive:
  dir: %q
log:
  audit: %q
`, hash, filepath.Join(dir, "archive"), auditPath))
	sp := &signalProxy{dir: dir, cfgPath: cfgPath, cfg: cfg}
	sp.p = startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(sp.p.out.String())
	if m == nil {
		t.Fatalf("no admin address in the start-up log:\n%s", sp.p.out)
	}

	// The refusal.
	client := proxyClient(t, sp.p.addr, cfg.caPath())
	client.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("trainer", "pw"), Host: sp.p.addr})
	r := tdmGet(t, client, u, true)
	var e struct {
		Decision, Message string
		LicenseTerm       string `json:"license_term"`
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || r.status != 403 || e.Decision != "license-required" || e.LicenseTerm != term ||
		!strings.Contains(e.Message, "clients[].accept_payment") {
		t.Errorf("refusal: %d %s, want 403 license-required naming %s", r.status, r.body, term)
	}
	// check and /explain.
	out, _, code := runBin(t, dir, "check", "-config", cfgPath, "-client", "127.0.0.1", "-user", "trainer", "-fetch", u)
	if code != 1 || !strings.HasPrefix(out, "LICENSE-REQUIRED") || !strings.Contains(out, term) || !strings.Contains(out, terms) {
		t.Errorf("check: exit %d\n%s\nwant LICENSE-REQUIRED naming %s and listing %s", code, out, term, terms)
	}
	body := httpPost(t, "http://"+m[1]+"/explain", url.Values{"url": {u}, "client": {"127.0.0.1"}, "user": {"trainer"}})
	var x admin.Explanation
	if err := json.Unmarshal([]byte(body), &x); err != nil || x.Decision != "license-required" || !strings.Contains(x.Note, term) {
		t.Errorf("/explain: %v %s", err, body)
	}
	found := false
	for _, s := range x.UsageSignals {
		found = found || s.Signal == "rsl" && slices.Contains(s.Terms, terms)
	}
	if !found {
		t.Errorf("/explain lists no rsl signal with the terms %q: %+v", terms, x.UsageSignals)
	}
	// The audit record, and the report.
	sp.p.stop(0)
	rec, ok := waitRecord(auditPath, func(r *audit.Record) bool { return r.URL == u && r.Decision == "license-required" })
	if !ok || !strings.Contains(rec.Note, term) || len(rec.Usage) == 0 || !slices.Contains(rec.Usage[len(rec.Usage)-1].Terms, terms) {
		t.Errorf("audit record: %+v", rec)
	}
	stdout, stderr, code := runBin(t, dir, "report", "-config", cfgPath, "-format", "json")
	var rep report.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil {
		t.Fatalf("report -format json: exit %d, stderr %s", code, stderr)
	}
	found = false
	for _, o := range rep.Origins {
		for _, s := range o.RefusedBySignal {
			found = found || s.Signal == "rsl" && slices.Contains(s.Terms, terms)
		}
	}
	if !found {
		t.Errorf("the report lists no rsl refusal with the terms %q", terms)
	}
}
