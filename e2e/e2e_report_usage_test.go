package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/report"
)

// TestE2EReportListsAIUsageRefusals: a client with purposes [train-ai] is
// refused through the binary by a tdmrep.json entry, an X-Robots-Tag
// header and a robots meta tag; the report then lists each refusal under
// its signal, says the origin saw the requests refused from its response
// and not the one refused by tdmrep.json, and has the archived
// tdmrep.json in its appendix, linked from the table; headless Chromium
// renders it without a request.
func TestE2EReportListsAIUsageRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nAllow: /\n")
		case "/.well-known/tdmrep.json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, e2eTDMRep)
		case "/news/xrt":
			w.Header().Set("X-Robots-Tag", "noai")
			io.WriteString(w, "page")
		case "/news/meta":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<html><head><meta name="robots" content="noai"></head><body>page</body></html>`)
		default:
			io.WriteString(w, "page")
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.6:0")
	if err != nil {
		t.Fatal(err)
	}
	o := httptest.NewUnstartedServer(h)
	o.Listener.Close()
	o.Listener = ln
	o.Start()
	t.Cleanup(o.Close)

	writeFile(t, filepath.Join(dir, "cfg.yaml"), `egress:
  allow_networks: [127.0.0.0/8]
clients:
  - { cidr: 127.0.0.1/32, purposes: [train-ai] }
usage:
  scan_html: true
`)
	p := startServe(t, dir, "-config", "cfg.yaml", "-listen", "127.0.0.1:0", "-admin-listen", "off")
	c := dialProxy(t, p.addr)
	for _, path := range []string{"/articles/2024/story", "/news/xrt", "/news/meta"} {
		if r := c.get(o.URL + path); r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "usage-denied" {
			t.Fatalf("%s: %d %q, want 403 usage-denied", path, r.status, r.header.Get("X-Robotsgate-Decision"))
		}
	}
	if r := c.get(o.URL + "/about"); r.status != 200 {
		t.Fatalf("/about: %d, want 200", r.status)
	}
	p.stop(0)

	stdout, stderr, code := runBin(t, dir, "report", "-config", "cfg.yaml", "-format", "json")
	var r report.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || len(r.Origins) != 1 {
		t.Fatalf("report -format json: exit %d, stderr %s, %d origins", code, stderr, len(r.Origins))
	}
	if rules := r.Origins[0].RefusedByRule; len(rules) != 0 {
		t.Errorf("refused by robots.txt rule: %+v, want none (robots.txt allowed every path)", rules)
	}
	tdmSHA := archive.Sum([]byte(e2eTDMRep))
	answered := map[string]bool{}
	for _, s := range r.Origins[0].RefusedBySignal {
		if s.Count != 1 || len(s.Refuses) == 0 {
			t.Errorf("signal %+v, want one refusal of a purpose", s)
		}
		answered[s.Signal] = s.OriginAnswered
		if s.Signal == "tdmrep" && (s.TDMRepSHA256 != tdmSHA || s.Policy != "https://publisher.example/tdm-policy.json") {
			t.Errorf("tdmrep signal %+v, want the body %s and its tdm-policy", s, tdmSHA)
		}
	}
	if want := map[string]bool{"tdmrep": false, "x-robots-tag": true, "meta-robots": true}; len(answered) != 3 ||
		answered["tdmrep"] != want["tdmrep"] || !answered["x-robots-tag"] || !answered["meta-robots"] {
		t.Errorf("signals and whether the origin answered: %v, want %v", answered, want)
	}
	var tdmBody *report.Body
	for i := range r.Bodies {
		if r.Bodies[i].SHA256 == tdmSHA {
			tdmBody = &r.Bodies[i]
		}
	}
	if tdmBody == nil || tdmBody.Kind != "tdmrep.json" || tdmBody.Missing {
		t.Errorf("bodies %+v, want the archived tdmrep.json %s", r.Bodies, tdmSHA)
	}

	htmlPath := filepath.Join(dir, "report.html")
	if _, stderr, code := runBin(t, dir, "report", "-config", "cfg.yaml", "-o", htmlPath); code != 0 {
		t.Fatalf("report -o: exit %d, stderr:\n%s", code, stderr)
	}
	dom, requests := chromiumReport(t, htmlPath, "--dump-dom")
	if len(requests) > 0 {
		t.Errorf("loading the report, the page made requests: %q", requests)
	}
	for _, want := range []string{"Refused by AI-usage signal", "yes: it answered, the response was withheld",
		`href="#robots-` + tdmSHA + `"`, `id="robots-` + tdmSHA + `"`, "tdm-reservation"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page as Chromium built it lacks %q", want)
		}
	}
	shot := filepath.Join(dir, "report-usage-1280.png")
	chromiumReport(t, htmlPath, "--window-size=1280,2400", "--hide-scrollbars", "--force-device-scale-factor=1", "--screenshot="+shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
	if path := os.Getenv("ROBOTSGATE_REPORT_USAGE_SCREENSHOT"); path != "" {
		if err := os.WriteFile(path, []byte(readText(t, shot)), 0o644); err != nil {
			t.Error(err)
		}
	}
}
