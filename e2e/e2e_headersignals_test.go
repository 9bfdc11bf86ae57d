//go:build unix

package e2e

// The response signals robotsgate reads besides TDMRep, Content-Usage and
// X-Robots-Tag noai: the Content-Signal header (with its use= key), the
// Robots-Tag header (a structured-field list; one that does not parse
// still refuses on sight of noai), noml wherever noai is read, and the
// Content-Usage labels of earlier aipref drafts. Through the real binary,
// for clients of three purposes: each signal refuses the purposes it
// concerns and no other, and the proxy, check -fetch and /explain?fetch=1
// say so alike; the refusals are counted under the signal's metric label
// and listed under their signal by the report.

import (
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

// headerSignalPages are the origin's header fields by path.
var headerSignalPages = map[string][]string{
	"/cs":        {"Content-Signal", "search=yes, ai-train=no, ai-input=no"},
	"/cs-use":    {"Content-Signal", "use=no"},
	"/rt":        {"Robots-Tag", "*;noai, ExampleBot;noindex"},
	"/rt-scoped": {"Robots-Tag", "TestBot;noml, OtherBot;noai"},
	"/rt-other":  {"Robots-Tag", "OtherBot;noai, *;noindex"},
	"/rt-bad":    {"Robots-Tag", "*;noindex, TestBot: noai"}, // X-Robots-Tag syntax: not a structured-field list
	"/xrt-noml":  {"X-Robots-Tag", "noindex, noml"},
	"/cu-genai":  {"Content-Usage", "train-genai=n"},
	"/cu-bots":   {"Content-Usage", "bots=n, search=y"},
}

const headerSignalsRobots = "User-agent: *\nAllow: /\nContent-Usage: /rb/ inference=n\n"

func headerSignalsOrigin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			io.WriteString(w, headerSignalsRobots)
			return
		case r.URL.Path == "/.well-known/tdmrep.json":
			http.NotFound(w, r)
			return
		case r.URL.Path == "/meta-noml":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!doctype html><html><head><meta name="robots" content="noml"></head><body>page</body></html>`)
			return
		}
		if kv := headerSignalPages[r.URL.Path]; kv != nil {
			w.Header().Set(kv[0], kv[1])
		}
		io.WriteString(w, "page")
	})
}

// headerSignalCase is one client's request and what must refuse it.
type headerSignalCase struct {
	path, user string
	kind       string // the refusing signal's kind, "" when allowed
	why        string // the refusal as ResponseSignal.Explain says it, "" for a robots.txt line
}

func TestE2EHeaderSignalsRefuseTheirPurposesAlike(t *testing.T) {
	dir := t.TempDir()
	o := httptest.NewServer(headerSignalsOrigin())
	t.Cleanup(o.Close)
	hash, err := bcrypt.GenerateFromPassword([]byte(decisionsPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath, auditPath := filepath.Join(dir, "cfg.yaml"), filepath.Join(dir, "audit.log")
	cfg := e2eConfig{dir: dir}.yaml() + "usage:\n  scan_html: true\nclients:\n"
	for user, purpose := range map[string]string{"trainer": "train-ai", "searcher": "search", "inputter": "ai-input"} {
		cfg += fmt.Sprintf("  - {user: %s, password_bcrypt: %q, purposes: [%s]}\n", user, hash, purpose)
	}
	writeFile(t, cfgPath, cfg+fmt.Sprintf("log:\n  audit: %q\n", auditPath))

	const cs, rt = audit.SignalHeaderContentSignal, audit.SignalRobotsTag
	cases := []headerSignalCase{
		{"/cs", "trainer", cs, "Content-Signal: search=yes, ai-train=no, ai-input=no (ai-train=no) refuses the purpose train-ai"},
		{"/cs", "inputter", cs, "Content-Signal: search=yes, ai-train=no, ai-input=no (ai-input=no) refuses the purpose ai-input"},
		{"/cs", "searcher", "", ""},
		{"/cs-use", "trainer", cs, "Content-Signal: use=no refuses the purpose train-ai"},
		{"/cs-use", "searcher", cs, "Content-Signal: use=no refuses the purpose search"},
		{"/cs-use", "inputter", cs, "Content-Signal: use=no refuses the purpose ai-input"},
		{"/rt", "trainer", rt, "Robots-Tag: *;noai, ExampleBot;noindex (noai) refuses the purpose train-ai"},
		{"/rt", "searcher", "", ""},
		{"/rt", "inputter", "", ""},
		{"/rt-scoped", "trainer", rt, "Robots-Tag: TestBot;noml, OtherBot;noai (noml) refuses the purpose train-ai"},
		{"/rt-scoped", "searcher", "", ""},
		{"/rt-other", "trainer", "", ""},
		{"/rt-bad", "trainer", rt, "Robots-Tag: *;noindex, TestBot: noai (noai) refuses the purpose train-ai"},
		{"/rt-bad", "inputter", "", ""},
		{"/xrt-noml", "trainer", audit.SignalXRobotsTag, "X-Robots-Tag: noindex, noml (noml) refuses the purpose train-ai"},
		{"/xrt-noml", "searcher", "", ""},
		{"/meta-noml", "trainer", audit.SignalMetaRobots, `<meta name="robots" content="noml"> refuses the purpose train-ai`},
		{"/meta-noml", "inputter", "", ""},
		{"/cu-genai", "trainer", audit.SignalHeaderContentUsage, "Content-Usage: train-genai=n refuses the purpose train-ai"},
		{"/cu-genai", "searcher", "", ""},
		{"/cu-bots", "searcher", audit.SignalHeaderContentUsage, "Content-Usage: bots=n, search=y (bots=n) refuses the purpose search"},
		{"/rb/x", "inputter", audit.SignalRobotsContentUsage, ""},
		{"/rb/x", "trainer", "", ""},
	}

	p := startServe(t, dir, "-config", cfgPath, "-admin-listen", "127.0.0.1:0")
	am := regexp.MustCompile(`admin=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	if am == nil {
		t.Fatalf("no admin address in the start-up log:\n%s", p.out)
	}
	adminAddr := am[1]
	decisionOf := func(c headerSignalCase) decisionCase {
		return decisionCase{name: c.path + " " + c.user, user: c.user, ua: "TestBot/1.0", url: o.URL + c.path}
	}
	want := func(c headerSignalCase) string {
		return map[bool]string{true: "usage-denied", false: "allow"}[c.kind != ""]
	}

	// The proxy first: its refusals alone are what the metrics count.
	for _, c := range cases {
		t.Run("proxy "+c.path+" "+c.user, func(t *testing.T) {
			d := decisionOf(c)
			got := proxyDecision(t, p.addr, auditPath, d)
			if got.decision != want(c) {
				t.Fatalf("decision %s, want %s", got.decision, want(c))
			}
			rec, _ := waitRecord(auditPath, func(r *audit.Record) bool {
				return r.URL == d.url && r.User == c.user && !strings.Contains(r.Note, "fetched to explain")
			})
			if c.why != "" && !strings.Contains(rec.Note, c.why) {
				t.Errorf("audit note %q does not say %q", rec.Note, c.why)
			}
			if c.kind != "" && !refusedBy(rec.Usage, c.kind, purposeOf(c.user)) {
				t.Errorf("audit usage %+v: no %s refusing %s", rec.Usage, c.kind, purposeOf(c.user))
			}
		})
	}
	_, metrics := adminStatus(t, "http://"+adminAddr+"/metrics")
	for kind, n := range map[string]int{cs: 5, rt: 3} { // counted by the table above
		line := fmt.Sprintf(`robotsgate_usage_refusals_total{signal=%q} %d`, kind, n)
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics has no %q", line)
		}
	}

	stdout, stderr, code := runBin(t, dir, "report", "-config", cfgPath, "-format", "json")
	var r report.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || len(r.Origins) != 1 {
		t.Fatalf("report -format json: exit %d, stderr %s", code, stderr)
	}
	counted := map[string]int64{}
	for _, s := range r.Origins[0].RefusedBySignal {
		if s.Signal == cs || s.Signal == rt {
			if !s.OriginAnswered {
				t.Errorf("report: %+v not read from the origin's answer", s)
			}
			counted[s.Signal] += s.Count
		}
	}
	if counted[cs] != 5 || counted[rt] != 3 {
		t.Errorf("report counts refusals by signal %v, want %s 5 and %s 3", counted, cs, rt)
	}

	for _, c := range cases {
		t.Run("check and explain "+c.path+" "+c.user, func(t *testing.T) {
			d := decisionOf(c)
			out, _, code := runBin(t, dir, "check", "-config", cfgPath, "-client", "127.0.0.1", "-ua", d.ua, "-user", c.user, "-fetch", d.url)
			if verdict, _, _ := strings.Cut(out, " "); strings.ToLower(verdict) != want(c) || code != checkExit(want(c)) {
				t.Errorf("check: exit %d, want %s:\n%s", code, want(c), out)
			}
			if c.why != "" && !strings.Contains(out, c.why) {
				t.Errorf("check does not say %q:\n%s", c.why, out)
			}
			if c.kind != "" && !regexp.MustCompile(`usage signal `+c.kind+` .* refuses .*\b`+purposeOf(c.user)+`\b`).MatchString(out) {
				t.Errorf("check does not list %s refusing %s:\n%s", c.kind, purposeOf(c.user), out)
			}

			q := url.Values{"url": {d.url}, "ua": {d.ua}, "client": {"127.0.0.1"}, "fetch": {"1"}, "user": {c.user}}
			body := httpPost(t, "http://"+adminAddr+"/explain", q)
			var e admin.Explanation
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("/explain: %v\n%s", err, body)
			}
			if e.Decision != want(c) {
				t.Errorf("/explain: %s, want %s", e.Decision, want(c))
			}
			if c.why != "" && !strings.Contains(e.Note, c.why) {
				t.Errorf("/explain note %q does not say %q", e.Note, c.why)
			}
			if c.kind != "" && !refusedBy(e.UsageSignals, c.kind, purposeOf(c.user)) {
				t.Errorf("/explain usage_signals %+v: no %s refusing %s", e.UsageSignals, c.kind, purposeOf(c.user))
			}
		})
	}
}

func purposeOf(user string) string {
	return map[string]string{"trainer": "train-ai", "searcher": "search", "inputter": "ai-input"}[user]
}

// refusedBy reports whether signals has one of kind refusing purpose.
func refusedBy(signals []audit.UsageSignal, kind, purpose string) bool {
	for _, s := range signals {
		if s.Signal == kind && slices.Contains(s.Refuses, purpose) {
			return true
		}
	}
	return false
}
