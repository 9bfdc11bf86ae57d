package compliance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
)

func TestAgrees(t *testing.T) {
	refused := Judgement{Allowed: false, Rule: "Disallow: /private", Line: 2}
	allowed := Judgement{Allowed: true, Rule: "Allow: /private/ok", Line: 3}
	none := Judgement{Allowed: true}
	for _, c := range []struct {
		name string
		j    Judgement
		rec  audit.Record
		want bool
	}{
		{"disallow by the same rule", refused, audit.Record{Decision: "disallow", Rule: "Disallow: /private", Line: 2}, true},
		{"disallow recorded as allow", refused, audit.Record{Decision: "allow", Rule: "Disallow: /private", Line: 2}, false},
		{"disallow by another line", refused, audit.Record{Decision: "disallow", Rule: "Disallow: /private", Line: 5}, false},
		{"disallow by another rule", refused, audit.Record{Decision: "disallow", Rule: "Disallow: /", Line: 2}, false},
		{"disallow without its rule", refused, audit.Record{Decision: "disallow"}, false},
		{"monitor: disallow not enforced", refused, audit.Record{Decision: "disallow", Mode: "monitor", Rule: "Disallow: /private", Line: 2}, true},
		{"allow by the same rule", allowed, audit.Record{Decision: "allow", Rule: "Allow: /private/ok", Line: 3}, true},
		{"allow naming no rule", allowed, audit.Record{Decision: "allow"}, true},
		{"allow naming another rule", allowed, audit.Record{Decision: "allow", Rule: "Allow: /private", Line: 3}, false},
		{"allowed by robots.txt, rate-limited", allowed, audit.Record{Decision: "rate-limited", Rule: "Allow: /private/ok", Line: 3}, true},
		{"allowed by robots.txt, usage-denied", none, audit.Record{Decision: "usage-denied"}, true},
		{"allowed recorded as disallow", none, audit.Record{Decision: "disallow"}, false},
		{"no rule replayed, one recorded", none, audit.Record{Decision: "allow", Rule: "Allow: /x", Line: 4}, false},
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
	get := &audit.Record{Method: "GET", Agent: "Bot", URL: "https://example.com/"}
	if j := ReplayJudgement(f, get); j.Allowed || j.Rule != "Disallow: /" || j.Line != 2 {
		t.Errorf("GET /: %+v, want refused by Disallow: / (line 2)", j)
	}
	connect := &audit.Record{Method: "CONNECT", Agent: "Bot", URL: "https://example.com:443/"}
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
	w, err := archive.Open(dir, nil, nil)
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
	rec := func(decision, url, sha string) *audit.Record {
		r := &audit.Record{Method: "GET", Agent: "Bot", URL: url, Decision: decision, RobotsSHA256: sha}
		if decision == "disallow" {
			r.Rule, r.Line = "Disallow: /private", 2
		}
		return r
	}
	for _, c := range []struct {
		name    string
		rec     *audit.Record
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

// VerifyAudit gives the records of ReadAudit, in the same order with the
// same files and lines, and skips the same bad lines, whatever the number
// of workers.
func TestVerifyAuditIsReadAuditInParallel(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, n := range []int{1500, 0, 3, 1100} {
		var b strings.Builder
		for k := 1; k <= n; k++ {
			if k%100 == 0 {
				b.WriteString("  \n") // blank lines count but are no records
				continue
			}
			fmt.Fprintf(&b, `{"url":"http://a/%d/%d","decision":"allow"}`+"\n", i, k)
		}
		if i == 3 {
			b.WriteString("not json\n" + `{"url":"http://a/after"}` + "\n")
		}
		files = append(files, filepath.Join(dir, fmt.Sprintf("audit-%d.log", i)))
		if err := os.WriteFile(files[i], []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	skipTo := func(out *[]string) SkipFunc {
		return func(file string, line int, err error) {
			*out = append(*out, fmt.Sprintf("%s:%d skipped", filepath.Base(file), line))
		}
	}
	wantErr := ReadAudit(files, func(r *audit.Record, file string, line int) error {
		want = append(want, fmt.Sprintf("%s:%d %s", filepath.Base(file), line, r.URL))
		return nil
	}, skipTo(&want))
	if wantErr != nil || !slices.Contains(want, "audit-3.log:1101 skipped") || len(want) != 1485+3+1089+2 {
		t.Fatalf("ReadAudit: %d records, %v", len(want), wantErr)
	}
	b := NewBodies(dir)
	for _, workers := range []int{1, 2, 7} {
		var got []string
		err := VerifyAudit(files, b, workers, func(r *audit.Record, file string, line int, v Verification) error {
			if v.Outcome != NotJudged {
				t.Errorf("%s:%d: %+v, want NotJudged", file, line, v)
			}
			got = append(got, fmt.Sprintf("%s:%d %s", filepath.Base(file), line, r.URL))
			return nil
		}, skipTo(&got))
		if err != nil {
			t.Errorf("%d workers: error %v", workers, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d workers: %d records, not those of ReadAudit (%d)", workers, len(got), len(want))
		}
		// An error of fn stops the reading.
		n := 0
		stop := errors.New("stop")
		err = VerifyAudit(files, b, workers, func(*audit.Record, string, int, Verification) error {
			if n++; n == 700 {
				return stop
			}
			return nil
		}, func(string, int, error) {})
		if err != stop || n != 700 {
			t.Errorf("%d workers: stopping at 700: %v after %d records", workers, err, n)
		}
	}
	missing := append(files[:1:1], filepath.Join(dir, "nope.log"))
	n := 0
	err := VerifyAudit(missing, b, 2, func(*audit.Record, string, int, Verification) error { n++; return nil }, func(string, int, error) {})
	if !errors.Is(err, fs.ErrNotExist) || n != 1485 {
		t.Errorf("a missing second file: %v after %d records", err, n)
	}
}

// A record whose robots_sha256 is not a SHA-256 is never used as a path,
// and one whose replayed fields were cut cannot be replayed: both are
// unverifiable, saying why.
func TestVerifyRefusesRecordsItCannotReplayFaithfully(t *testing.T) {
	dir := t.TempDir()
	body := []byte("User-agent: *\nDisallow: /private\n")
	sum := archive.Sum(body)
	os.MkdirAll(filepath.Dir(archive.BodyPath(dir, sum)), 0o755)
	os.WriteFile(archive.BodyPath(dir, sum), body, 0o644)
	os.WriteFile(filepath.Join(dir, "passwd"), body, 0o644) // what a traversal would reach
	b := NewBodies(filepath.Join(dir, "sub"))
	for _, c := range []struct {
		name string
		rec  audit.Record
		why  string
	}{
		{"a path for a SHA-256", audit.Record{URL: "http://a/x", Decision: "allow", RobotsSHA256: "../../passwd"}, "is not a SHA-256"},
		{"upper-case hex", audit.Record{URL: "http://a/x", Decision: "allow", RobotsSHA256: strings.ToUpper(sum)}, "is not a SHA-256"},
		{"a cut URL", audit.Record{URL: "http://a/private", Decision: "disallow", RobotsSHA256: sum, Truncated: []string{"url"}}, "url was cut"},
		{"a cut agent", audit.Record{URL: "http://a/private", Decision: "disallow", RobotsSHA256: sum, Truncated: []string{"note", "agent"}}, "agent was cut"},
	} {
		v := b.Verify(&c.rec)
		if v.Outcome != Unverifiable || v.Err == nil || !strings.Contains(v.Err.Error(), c.why) {
			t.Errorf("%s: %+v, want unverifiable: %s", c.name, v, c.why)
		}
	}
	// A cut note does not stop the replay.
	if v := NewBodies(dir).Verify(&audit.Record{URL: "http://a/x", Decision: "allow", RobotsSHA256: sum, Truncated: []string{"note"}}); v.Outcome != Verified {
		t.Errorf("a record with a cut note: %+v, want verified", v)
	}
}
