package compliance

import (
	"os"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/proxy"
	"github.com/robotsgate/robotsgate/robots"
)

func TestAgrees(t *testing.T) {
	refused := Judgement{Allowed: false, Rule: "Disallow: /private", Line: 2}
	allowed := Judgement{Allowed: true, Rule: "Allow: /private/ok", Line: 3}
	none := Judgement{Allowed: true}
	for _, c := range []struct {
		name string
		j    Judgement
		rec  proxy.AuditRecord
		want bool
	}{
		{"disallow by the same rule", refused, proxy.AuditRecord{Decision: "disallow", Rule: "Disallow: /private", Line: 2}, true},
		{"disallow recorded as allow", refused, proxy.AuditRecord{Decision: "allow", Rule: "Disallow: /private", Line: 2}, false},
		{"disallow by another line", refused, proxy.AuditRecord{Decision: "disallow", Rule: "Disallow: /private", Line: 5}, false},
		{"disallow by another rule", refused, proxy.AuditRecord{Decision: "disallow", Rule: "Disallow: /", Line: 2}, false},
		{"disallow without its rule", refused, proxy.AuditRecord{Decision: "disallow"}, false},
		{"monitor: disallow not enforced", refused, proxy.AuditRecord{Decision: "disallow", Mode: "monitor", Rule: "Disallow: /private", Line: 2}, true},
		{"allow by the same rule", allowed, proxy.AuditRecord{Decision: "allow", Rule: "Allow: /private/ok", Line: 3}, true},
		{"allow naming no rule", allowed, proxy.AuditRecord{Decision: "allow"}, true},
		{"allow naming another rule", allowed, proxy.AuditRecord{Decision: "allow", Rule: "Allow: /private", Line: 3}, false},
		{"allowed by robots.txt, rate-limited", allowed, proxy.AuditRecord{Decision: "rate-limited", Rule: "Allow: /private/ok", Line: 3}, true},
		{"allowed by robots.txt, usage-denied", none, proxy.AuditRecord{Decision: "usage-denied"}, true},
		{"allowed recorded as disallow", none, proxy.AuditRecord{Decision: "disallow"}, false},
		{"no rule replayed, one recorded", none, proxy.AuditRecord{Decision: "allow", Rule: "Allow: /x", Line: 4}, false},
	} {
		if got := c.j.Agrees(&c.rec); got != c.want {
			t.Errorf("%s: Agrees = %v, want %v", c.name, got, c.want)
		}
	}
}

// A CONNECT not intercepted is judged as DecideHost judges a host: refused
// only when every path is, whatever "/" alone would get.
func TestReplayJudgementOfAHost(t *testing.T) {
	f := robots.Parse([]byte("User-agent: *\nDisallow: /\nAllow: /public\n\nUser-agent: Closed\nDisallow: /\n"))
	get := &proxy.AuditRecord{Method: "GET", Agent: "Bot", URL: "https://example.com/"}
	if j := ReplayJudgement(f, get); j.Allowed || j.Rule != "Disallow: /" || j.Line != 2 {
		t.Errorf("GET /: %+v, want refused by Disallow: / (line 2)", j)
	}
	connect := &proxy.AuditRecord{Method: "CONNECT", Agent: "Bot", URL: "https://example.com:443/"}
	if j := ReplayJudgement(f, connect); !j.Allowed || j.Rule != "Disallow: /" || j.Line != 2 {
		t.Errorf("CONNECT: %+v, want allowed (paths cannot be judged), rule Disallow: / (line 2)", j)
	}
	connect.Agent = "Closed"
	if j := ReplayJudgement(f, connect); j.Allowed || j.Rule != "Disallow: /" || j.Line != 6 {
		t.Errorf("CONNECT as Closed: %+v, want refused by Disallow: / (line 6)", j)
	}
}

func TestBodiesVerify(t *testing.T) {
	dir := t.TempDir()
	w, err := archive.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("User-agent: *\nDisallow: /private\n")
	sum := archive.Sum(body)
	w.Record(archive.Fetch{SHA256: sum}, body)
	other := []byte("User-agent: *\nDisallow: /other\n")
	w.Record(archive.Fetch{SHA256: archive.Sum(other)}, other)
	w.Close()
	// A body changed after it was archived no longer matches its name.
	if err := os.WriteFile(archive.BodyPath(dir, archive.Sum(other)), []byte("User-agent: *\nDisallow:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := NewBodies(dir)
	rec := func(decision, url, sha string) *proxy.AuditRecord {
		r := &proxy.AuditRecord{Method: "GET", Agent: "Bot", URL: url, Decision: decision, RobotsSHA256: sha}
		if decision == "disallow" {
			r.Rule, r.Line = "Disallow: /private", 2
		}
		return r
	}
	for _, c := range []struct {
		name    string
		rec     *proxy.AuditRecord
		want    Outcome
		missing bool
	}{
		{"no robots.txt body", rec("allow", "http://a/robots.txt", ""), NotJudged, false},
		{"disallowed", rec("disallow", "http://a/private/x", sum), Verified, false},
		{"allowed", rec("allow", "http://a/public", sum), Verified, false},
		{"altered", rec("allow", "http://a/private/x", sum), Disagrees, false},
		{"missing", rec("allow", "http://a/x", archive.Sum([]byte("never archived"))), Unverifiable, true},
		{"tampered body", rec("allow", "http://a/x", archive.Sum(other)), Unverifiable, false},
	} {
		v := b.Verify(c.rec)
		if v.Outcome != c.want || v.Missing() != c.missing {
			t.Errorf("%s: %+v (missing %v), want outcome %d (missing %v)", c.name, v, v.Missing(), c.want, c.missing)
		}
	}
}
