package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/tdmrep"
)

const proxyTDMRep = `[
  {"location": "/private/open/*", "tdm-reservation": 0},
  {"location": "/private/", "tdm-reservation": 1, "tdm-policy": "https://example.com/tdm-policy.json"}
]`

// tdmOrigin is an origin on ip that allows everything in robots.txt and
// answers tdmrep.json with tdmStatus (200: proxyTDMRep); it records the
// request-targets it receives.
type tdmOrigin struct {
	*httptest.Server
	mu      sync.Mutex
	targets []string
}

func (o *tdmOrigin) saw(target string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, t := range o.targets {
		if t == target {
			n++
		}
	}
	return n
}

func startTDMOrigin(t *testing.T, ip string, tlsOn bool, tdmStatus int) *tdmOrigin {
	t.Helper()
	o := &tdmOrigin{}
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.targets = append(o.targets, r.RequestURI)
		o.mu.Unlock()
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		case tdmrep.Path:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tdmStatus)
			fmt.Fprint(w, proxyTDMRep)
		default:
			fmt.Fprintf(w, "target=%s", r.RequestURI)
		}
	}))
	o.Server.Listener.Close()
	o.Server.Listener = ln
	if tlsOn {
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	return o
}

func purposes(cfg *config.Config, p ...string) {
	cfg.Clients = []config.Client{{CIDR: "127.0.0.0/8", Mode: config.ModeEnforce, Purposes: p}}
}

// TestTDMRepRefusesTrainAI: a train-ai client is refused by the first
// matching tdmrep.json entry that reserves (403 usage-denied naming the
// entry and its tdm-policy, nothing sent to the origin), over HTTP and in
// an intercepted tunnel; an earlier entry that does not reserve wins over
// a later broader one; the file is fetched once, archived, and named in
// the audit record.
func TestTDMRepRefusesTrainAI(t *testing.T) {
	o := startTDMOrigin(t, "127.0.0.2", false, 200)
	tlsO := startTDMOrigin(t, "127.0.0.1", true, 200)
	cfg := testConfig(t, tlsO.Certificate())
	purposes(&cfg, "train-ai")
	cfg.Archive.Dir = filepath.Join(t.TempDir(), "archive")
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	c := p.client()

	for _, base := range []string{o.URL, tlsO.URL} {
		resp, body := get(t, c, base+"/private/page", "Accept", "application/json")
		checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
		var e refusal.Explanation
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%s: not JSON: %s", base, body)
		}
		if e.TDMEntry == nil || *e.TDMEntry != 1 || e.TDMLocation != "/private/" || e.TDMPolicy != "https://example.com/tdm-policy.json" ||
			e.TDMRepURL != base+tdmrep.Path || !strings.Contains(e.Message, `tdmrep.json[1] (location "/private/") has tdm-reservation 1`) {
			t.Errorf("%s: explanation %+v", base, e)
		}
		if resp, body := get(t, c, base+"/private/open/page"); resp.StatusCode != 200 || body != "target=/private/open/page" {
			t.Errorf("%s: the earlier entry's page: %d %q", base, resp.StatusCode, body)
		}
	}
	_, text := get(t, c, o.URL+"/private/page")
	for _, want := range []string{"tdmrep.json: " + o.URL + tdmrep.Path, `TDM entry:   [1] location "/private/"`, "TDM policy:  https://example.com/tdm-policy.json"} {
		if !strings.Contains(text, want) {
			t.Errorf("text body lacks %q:\n%s", want, text)
		}
	}
	if o.saw("/private/page") != 0 || tlsO.saw("/private/page") != 0 {
		t.Error("a refused request reached the origin")
	}
	if o.saw(tdmrep.Path) != 1 || tlsO.saw(tdmrep.Path) != 1 {
		t.Errorf("tdmrep.json fetched %d and %d times, want once each", o.saw(tdmrep.Path), tlsO.saw(tdmrep.Path))
	}

	sum := archive.Sum([]byte(proxyTDMRep))
	recs := waitAudit(t, cfg.Log.Audit, 6) // with the intercepted CONNECT's
	for _, r := range recs {
		if r["method"] == "CONNECT" {
			continue
		}
		if r["tdmrep_status"] != "ok" || r["tdmrep_sha256"] != sum {
			t.Errorf("audit %v: tdmrep_status %v tdmrep_sha256 %v", r["url"], r["tdmrep_status"], r["tdmrep_sha256"])
		}
	}
	if r := recs[0]; r["decision"] != "usage-denied" || r["tdm_entry"] != 1.0 || !strings.Contains(r["note"].(string), "tdm-policy") {
		t.Errorf("the refusal's audit record %v", r)
	}
	if r := recs[1]; r["decision"] != "allow" || r["tdm_entry"] != 0.0 {
		t.Errorf("the allowed request's audit record %v", r)
	}
	p.srv.evidence.Archive().Close()
	if body, err := archive.ReadBody(cfg.Archive.Dir, sum); err != nil || string(body) != proxyTDMRep {
		t.Errorf("archived body %q %v", body, err)
	}
	var tdmFetches []archive.Fetch
	for _, f := range readFetchLog(t, cfg.Archive.Dir) {
		if strings.HasSuffix(f.RobotsURL, tdmrep.Path) {
			tdmFetches = append(tdmFetches, f)
		}
	}
	if len(tdmFetches) != 2 || tdmFetches[0].SHA256 != sum || tdmFetches[0].Outcome != "ok" || tdmFetches[0].HTTPStatus != 200 ||
		tdmFetches[0].ContentType != "application/json" || tdmFetches[0].FinalURL != tdmFetches[0].RobotsURL {
		t.Errorf("tdmrep.json fetch lines %+v", tdmFetches)
	}
}

func readFetchLog(t *testing.T, dir string) []archive.Fetch {
	t.Helper()
	logs, _ := archive.FetchLogs(dir)
	var fetches []archive.Fetch
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		for sc := bufio.NewScanner(f); sc.Scan(); {
			if strings.Contains(sc.Text(), `"checkpoint":{`) {
				continue // the fetch log's signed checkpoint
			}
			var x archive.Fetch
			json.Unmarshal(sc.Bytes(), &x)
			fetches = append(fetches, x)
		}
		f.Close()
	}
	return fetches
}

// TestTDMRepUnknown: an unreachable tdmrep.json refuses a train-ai client
// with 503 usage-unknown and Retry-After (usage.on_unknown: refuse), or
// lets it through (allow); a client without purposes is forwarded and
// never makes the file fetched.
func TestTDMRepUnknown(t *testing.T) {
	o := startTDMOrigin(t, "127.0.0.2", false, 503)
	cfg := testConfig(t, nil)
	cfg.Log.Audit = filepath.Join(t.TempDir(), "audit.log")
	p := startProxy(t, cfg)
	if resp, body := get(t, p.client(), o.URL+"/private/page"); resp.StatusCode != 200 || body != "target=/private/page" || o.saw(tdmrep.Path) != 0 {
		t.Fatalf("no purposes: %d %q, tdmrep.json fetched %d times", resp.StatusCode, body, o.saw(tdmrep.Path))
	}
	if r := waitAudit(t, cfg.Log.Audit, 1)[0]; r["tdmrep_status"] != nil || r["tdm_entry"] != nil {
		t.Errorf("no purposes: audit record names a tdmrep.json: %v", r)
	}

	purposes(&cfg, "train-ai")
	if err := p.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, p.client(), o.URL+"/page", "Accept", "application/json")
	checkRefusal(t, resp, 503, "usage-unknown", "http_request_denied")
	var e refusal.Explanation
	json.Unmarshal([]byte(body), &e)
	if resp.Header.Get("Retry-After") == "" || e.TDMRepError != "http_5xx" || e.TDMRepURL != o.URL+tdmrep.Path ||
		!strings.Contains(e.Message, "tdmrep.json could not be fetched (http_5xx)") || o.saw("/page") != 0 {
		t.Errorf("Retry-After %q, explanation %+v, origin saw /page %d times", resp.Header.Get("Retry-After"), e, o.saw("/page"))
	}
	if r := waitAudit(t, cfg.Log.Audit, 2)[1]; r["decision"] != "usage-unknown" || r["tdmrep_status"] != "unreachable" || r["tdmrep_error"] != "http_5xx" {
		t.Errorf("audit record %v", r)
	}

	cfg.Usage.OnUnknown = config.UsageUnknownAllow
	if err := p.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if resp, body := get(t, p.client(), o.URL+"/page"); resp.StatusCode != 200 || body != "target=/page" {
		t.Errorf("usage.on_unknown allow: %d %q", resp.StatusCode, body)
	}
	if n := o.saw(tdmrep.Path); n != 1 {
		t.Errorf("tdmrep.json fetched %d times, want once (the failure is remembered)", n)
	}
}

// TestTDMRepHeaderOnlyAddsReservations: a tdm-reservation response header
// of 1 refuses where tdmrep.json reserves nothing, but a header of 0 does
// not lift the file's reservation: the file refuses before the request is
// sent, so the reserved page is never fetched (conservative, though
// TDMRep lets a header override the file).
func TestTDMRepHeaderOnlyAddsReservations(t *testing.T) {
	var mu sync.Mutex
	var pages []string
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		case tdmrep.Path:
			fmt.Fprint(w, proxyTDMRep)
		default:
			mu.Lock()
			pages = append(pages, r.URL.Path)
			mu.Unlock()
			w.Header().Set("Tdm-Reservation", map[bool]string{true: "0", false: "1"}[r.URL.Path == "/private/page"])
			fmt.Fprint(w, "BODY")
		}
	}))
	t.Cleanup(o.Close)
	cfg := testConfig(t, nil)
	purposes(&cfg, "tdm")
	p := startProxy(t, cfg)
	c := p.client()

	resp, body := get(t, c, o.URL+"/private/page")
	checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
	if !strings.Contains(body, `tdmrep.json[1] (location "/private/")`) {
		t.Errorf("the file's reservation: %s", body)
	}
	resp, body = get(t, c, o.URL+"/private/open/page")
	checkRefusal(t, resp, 403, "usage-denied", "http_request_denied")
	if !strings.Contains(body, "tdm-reservation: 1 refuses the purpose tdm") || strings.Contains(body, "BODY") {
		t.Errorf("the header's reservation: %s", body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pages) != 1 || pages[0] != "/private/open/page" {
		t.Errorf("the origin was asked for %q, want only /private/open/page (the file's reservation is never fetched)", pages)
	}
}
