//go:build unix

package e2e

// End-to-end test of W3C TDMRep: the real binary between a
// client with purposes [train-ai], a client without purposes (a proxy
// user), and origins on 127.0.0.x that serve /.well-known/tdmrep.json with
// reservations, with none (404), or not at all (503).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
)

// e2eTDMRep reserves /articles/ but, first in sequence, not
// /articles/free/ (not the last match); it reserves /archive/, and
// /archive/public/ too, whose later entry never applies (not the longest
// match).
const e2eTDMRep = `[
  {"location": "/articles/free/*", "tdm-reservation": 0},
  {"location": "/articles/", "tdm-reservation": 1, "tdm-policy": "https://publisher.example/tdm-policy.json"},
  {"location": "/archive/", "tdm-reservation": 1},
  {"location": "/archive/public/", "tdm-reservation": 0}
]`

// tdmE2EOrigin serves robots.txt (everything allowed), tdmrep.json with
// tdmStatus (200: e2eTDMRep) and "page TARGET" elsewhere; it records "UA
// TARGET" of every request.
type tdmE2EOrigin struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func startTDME2EOrigin(t *testing.T, ip string, useTLS bool, tdmStatus int) *tdmE2EOrigin {
	t.Helper()
	o := &tdmE2EOrigin{}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.requests = append(o.requests, r.UserAgent()+" "+r.RequestURI)
		o.mu.Unlock()
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nAllow: /\n")
		case "/.well-known/tdmrep.json":
			w.Header().Set("Content-Type", "application/json")
			if tdmStatus == http.StatusServiceUnavailable {
				w.Header().Set("Retry-After", "120")
			}
			w.WriteHeader(tdmStatus)
			if tdmStatus == http.StatusOK {
				io.WriteString(w, e2eTDMRep)
			}
		default:
			io.WriteString(w, "page "+r.RequestURI)
		}
	}))
	startAt(t, o.Server, ip, useTLS)
	return o
}

// count is how many requests for target the origin received from ua ("":
// any).
func (o *tdmE2EOrigin) count(ua, target string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.requests {
		gotUA, gotTarget := splitRequest(r)
		if gotTarget == target && (ua == "" || gotUA == ua) {
			n++
		}
	}
	return n
}

// tdmGet GETs rawURL through c, with Accept: application/json when asked.
func tdmGet(t *testing.T, c *http.Client, rawURL string, asJSON bool) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if asJSON {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s through the proxy: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(body)}
}

// TestE2ETDMRep: a train-ai client is refused by a reserving tdmrep.json
// entry (403 usage-denied naming the entry and its tdm-policy, over HTTP
// and intercepted HTTPS), allowed where an earlier entry does not reserve
// though a later broader one does, refused where an earlier entry reserves
// though a later longer one does not, allowed where no entry matches or the
// file is missing (404), and refused with 503 usage-unknown where the file
// cannot be fetched (503); the file is fetched once per origin, archived,
// and named in the audit log. A client without purposes is allowed
// everywhere, and its requests never make an origin asked for tdmrep.json.
func TestE2ETDMRep(t *testing.T) {
	dir := t.TempDir()
	reserved := startTDME2EOrigin(t, "127.0.0.2", false, http.StatusOK)
	reservedTLS := startTDME2EOrigin(t, "127.0.0.1", true, http.StatusOK)
	missing := startTDME2EOrigin(t, "127.0.0.1", false, http.StatusNotFound)
	down := startTDME2EOrigin(t, "127.0.0.3", false, http.StatusServiceUnavailable)
	origins := []*tdmE2EOrigin{reserved, reservedTLS, missing, down}

	cfg := e2eConfig{dir: dir, allowNetworks: "127.0.0.1/32, 127.0.0.2/32, 127.0.0.3/32", upstreamCA: true}
	(&origin{Server: reservedTLS.Server}).writeCertPEM(t, filepath.Join(dir, "upstream.pem"))
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	auditPath, archiveDir := filepath.Join(dir, "audit.log"), filepath.Join(dir, "archive")
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, cfg.yaml()+fmt.Sprintf(`clients:
  - { user: plain, password_bcrypt: %q }
  - { cidr: 127.0.0.1/32, purposes: [train-ai] }
archive:
  dir: %q
log:
  audit: %q
`, hash, archiveDir, auditPath))
	p := startServe(t, dir, "-config", cfgPath)
	train := proxyClient(t, p.addr, cfg.caPath())
	plain := proxyClient(t, p.addr, cfg.caPath())
	plain.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("plain", "pw"), Host: p.addr})

	pages := []string{
		reserved.URL + "/articles/2024/story", reserved.URL + "/articles/free/story", reserved.URL + "/about",
		reservedTLS.URL + "/articles/2024/story", missing.URL + "/articles/2024/story", down.URL + "/articles/2024/story",
	}
	allowedEverywhere := func(who string) {
		t.Helper()
		for _, u := range pages {
			if r := tdmGet(t, plain, u, false); r.status != 200 || !strings.HasPrefix(r.body, "page /") {
				t.Errorf("%s: client without purposes, GET %s: %d %q", who, u, r.status, r.body)
			}
		}
	}
	allowedEverywhere("first")
	for _, o := range origins {
		if n := o.count("", "/.well-known/tdmrep.json"); n != 0 {
			t.Fatalf("a client without purposes made %s asked for tdmrep.json %d times", o.URL, n)
		}
	}

	// The train-ai client.
	for _, base := range []string{reserved.URL, reservedTLS.URL} {
		r := tdmGet(t, train, base+"/articles/2024/story", true)
		var e struct {
			Decision, Message, TDMRepURL string
			TDMEntry                     *int   `json:"tdm_entry"`
			TDMLocation                  string `json:"tdm_location"`
			TDMPolicy                    string `json:"tdm_policy"`
		}
		if err := json.Unmarshal([]byte(r.body), &e); err != nil {
			t.Fatalf("%s: the refusal is not JSON: %d %q", base, r.status, r.body)
		}
		if r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "usage-denied" || e.TDMEntry == nil || *e.TDMEntry != 1 ||
			e.TDMLocation != "/articles/" || e.TDMPolicy != "https://publisher.example/tdm-policy.json" ||
			!strings.Contains(e.Message, `tdmrep.json[1] (location "/articles/") has tdm-reservation 1`) {
			t.Errorf("%s: train-ai refused by the entry: %d %s %+v", base, r.status, r.header.Get("X-Robotsgate-Decision"), e)
		}
		if !strings.Contains(r.header.Get("Proxy-Status"), `tdm-policy \"https://publisher.example/tdm-policy.json\"`) {
			t.Errorf("%s: Proxy-Status %q", base, r.header.Get("Proxy-Status"))
		}
	}
	text := tdmGet(t, train, reserved.URL+"/articles/2024/story", false).body
	for _, want := range []string{`TDM entry:   [1] location "/articles/"`, "TDM policy:  https://publisher.example/tdm-policy.json", "tdmrep.json: " + reserved.URL + "/.well-known/tdmrep.json"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plain-text refusal lacks %q:\n%s", want, text)
		}
	}
	r := tdmGet(t, train, reserved.URL+"/archive/public/old", false)
	if r.status != 403 || !strings.Contains(r.body, `tdmrep.json[2] (location "/archive/") has tdm-reservation 1`) {
		t.Errorf("train-ai, an earlier shorter entry over a later longer one: %d %q", r.status, r.body)
	}
	for _, u := range []string{reserved.URL + "/articles/free/story", reserved.URL + "/about", missing.URL + "/articles/2024/story"} {
		if r := tdmGet(t, train, u, false); r.status != 200 || !strings.HasPrefix(r.body, "page /") {
			t.Errorf("train-ai, GET %s (first match not reserving, no entry, no file): %d %q", u, r.status, r.body)
		}
	}
	r = tdmGet(t, train, down.URL+"/articles/2024/story", true)
	if r.status != 503 || r.header.Get("X-Robotsgate-Decision") != "usage-unknown" || r.header.Get("Retry-After") == "" ||
		!strings.Contains(r.body, `"tdmrep_error":"http_5xx"`) || !strings.Contains(r.body, "tdmrep.json could not be fetched (http_5xx)") {
		t.Errorf("train-ai, tdmrep.json unreachable: %d %s Retry-After %q %s", r.status, r.header.Get("X-Robotsgate-Decision"), r.header.Get("Retry-After"), r.body)
	}

	for _, o := range origins {
		if n := o.count(e2eFetchUA, "/.well-known/tdmrep.json"); n != 1 || o.count("", "/.well-known/tdmrep.json") != 1 {
			t.Errorf("%s: tdmrep.json fetched %d times by robotsgate, want once", o.URL, n)
		}
		want := 1 // the client without purposes'; train-ai's was refused
		if o == missing {
			want = 2 // no tdmrep.json: no reservation
		}
		if n := o.count("", "/articles/2024/story"); n != want {
			t.Errorf("%s: /articles/2024/story reached the origin %d times, want %d", o.URL, n, want)
		}
	}
	allowedEverywhere("after the train-ai client") // the reservations do not concern it

	// The audit log names the archived tdmrep.json; the archive has it.
	p.stop(0)
	sum := archive.Sum([]byte(e2eTDMRep))
	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var refusals, plainWithTDM int
	for line := range strings.Lines(string(data)) {
		var rec audit.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		switch {
		case rec.User == "plain" && rec.TDMRepStatus != "":
			plainWithTDM++
		case rec.Decision == "usage-denied":
			refusals++
			if rec.TDMRepSHA256 != sum || rec.TDMRepStatus != "ok" || rec.TDMEntry == nil || rec.UpstreamStatus != 0 {
				t.Errorf("audit of a refusal: %+v", rec)
			}
			if len(rec.Usage) != 1 || rec.Usage[0].Signal != "tdmrep" || !strings.HasPrefix(rec.Usage[0].Where, "tdmrep.json[") ||
				!contains(rec.Usage[0].Refuses, "train-ai") {
				t.Errorf("audit usage of a refusal: %+v, want the tdmrep entry refusing train-ai", rec.Usage)
			}
		case rec.Decision == "usage-unknown":
			if rec.TDMRepStatus != "unreachable" || rec.TDMRepError != "http_5xx" || rec.Status != 503 {
				t.Errorf("audit of usage-unknown: %+v", rec)
			}
		}
	}
	if refusals != 4 || plainWithTDM != 0 {
		t.Errorf("%d usage-denied records (want 4), %d records of the client without purposes name a tdmrep.json", refusals, plainWithTDM)
	}
	if body, err := archive.ReadBody(archiveDir, sum); err != nil || string(body) != e2eTDMRep {
		t.Errorf("archived tdmrep.json: %q %v", body, err)
	}
}

// TestE2EExplainAndCheckListUsageSignals: /explain (with purposes= and
// fetch=1) and `robotsgate check -purposes -fetch` list every AI-usage
// signal of a URL with the purposes each refuses: robots.txt's
// Content-Usage and Content-Signal lines, the tdmrep.json entry, and the
// response's X-Robots-Tag; without -fetch the page is not requested.
func TestE2EExplainAndCheckListUsageSignals(t *testing.T) {
	dir := t.TempDir()
	var pageHits sync.Mutex
	hits := 0
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nContent-Usage: search=n\nAllow: /\nContent-Signal: ai-input=no\n")
		case "/.well-known/tdmrep.json":
			io.WriteString(w, `[{"location": "/", "tdm-reservation": 1, "tdm-policy": "https://example.org/p.json"}]`)
		default:
			pageHits.Lock()
			hits++
			pageHits.Unlock()
			w.Header().Set("X-Robots-Tag", "noai")
			io.WriteString(w, "page")
		}
	}))
	t.Cleanup(o.Close)
	cfg := e2eConfig{dir: dir}
	cfgPath, auditPath := filepath.Join(dir, "cfg.yaml"), filepath.Join(dir, "audit.log")
	writeFile(t, cfgPath, cfg.yaml()+fmt.Sprintf("log:\n  audit: %q\n", auditPath))
	want := map[string]string{ // kind: a purpose it refuses
		"robots-content-usage": "search", "robots-content-signal": "ai-input", "tdmrep": "tdm", "x-robots-tag": "train-ai",
	}

	out, _, code := runBin(t, dir, "check", "-config", cfgPath, "-purposes", "ai-train", "-fetch", o.URL+"/page")
	if code != 1 || !strings.HasPrefix(out, "USAGE-DENIED") {
		t.Errorf("check -purposes ai-train: exit %d, want 1 and USAGE-DENIED:\n%s", code, out)
	}
	out, _, code = runBin(t, dir, "check", "-config", cfgPath, "-fetch", o.URL+"/page")
	if code != 0 {
		t.Errorf("check without purposes: exit %d, want 0:\n%s", code, out)
	}
	for kind, purpose := range want {
		if !regexp.MustCompile(`usage signal ` + kind + ` .* refuses .*\b` + purpose + `\b`).MatchString(out) {
			t.Errorf("check -fetch does not list %s refusing %s:\n%s", kind, purpose, out)
		}
	}
	if hits != 1 {
		t.Errorf("the page was requested %d times by check -fetch, want once (not for the refused client)", hits)
	}
	if out, _, _ = runBin(t, dir, "check", "-config", cfgPath, o.URL+"/page"); strings.Contains(out, "x-robots-tag") || hits != 1 {
		t.Errorf("check without -fetch requested the page (%d requests) or lists its headers:\n%s", hits, out)
	}

	for _, evidence := range []string{auditPath, filepath.Join(dir, "robots-archive")} { // log.audit, archive.dir's default
		if _, err := os.Stat(evidence); err == nil {
			t.Errorf("check wrote %s: it must leave a proxy's evidence alone", evidence)
		}
	}

	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no admin address in the start-up log:\n%s", p.out)
	}
	var e admin.Explanation
	body := httpPost(t, "http://"+m[1]+"/explain", url.Values{"fetch": {"1"}, "ua": {"FooBot"}, "url": {o.URL + "/page"}})
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("/explain: %v\n%s", err, body)
	}
	if e.Decision != "allow" || e.TDMRep == nil || e.TDMRep.Status != "ok" || len(e.UsageSignals) != len(want) {
		t.Errorf("/explain: %s", body)
	}
	for _, s := range e.UsageSignals {
		if p, ok := want[s.Signal]; !ok || !contains(s.Refuses, p) {
			t.Errorf("/explain lists %+v, want one of %v refusing the purpose given there", s, want)
		}
	}
	// The fetch contacted the origin: the audit log says so, once its
	// writer has written the record (after the answer).
	auditRecords(t, auditPath, 2)
	data, err := os.ReadFile(auditPath)
	var rec audit.Record
	lines := strings.Split(strings.TrimSpace(string(data)), "\n") // the checkpoint of the log as opened, the record
	if err != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &rec) != nil || rec.URL != o.URL+"/page" || rec.UpstreamStatus != 200 || rec.Status != 0 ||
		!strings.Contains(rec.Note, "fetched to explain") || len(rec.Usage) != len(want) {
		t.Errorf("audit log after /explain?fetch=1 (%v): %s", err, data)
	}
	body = httpGet(t, "http://"+m[1]+"/explain?purposes=train-ai&url="+url.QueryEscape(o.URL+"/page"))
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Decision != "usage-denied" || len(e.UsageSignals) != 3 {
		t.Errorf("/explain?purposes=train-ai without fetch: want usage-denied and the 3 signals of robots.txt and tdmrep.json: %s", body)
	}
}
