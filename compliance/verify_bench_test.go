package compliance

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
)

// The verify benchmark reads an audit log as the proxy writes it, spread
// over benchOrigins origins, each with a robots.txt body of its own in the
// archive.
const benchOrigins = 10_000

// benchBody is origin i's robots.txt: some 1.3 KB, groups for three
// agents, wildcards and a Crawl-delay, like a real site's file.
func benchBody(i int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# robots.txt of site-%05d.example\nUser-agent: *\nDisallow: /private-%d/\nAllow: /private-%d/public/\n"+
		"Disallow: /search\nDisallow: /*.pdf$\nDisallow: /*?sessionid=\nCrawl-delay: 1\n", i, i, i)
	for k := range 30 {
		fmt.Fprintf(&b, "Disallow: /section-%d-%d/\n", i, k)
	}
	fmt.Fprintf(&b, "\nUser-agent: FooBot\nDisallow: /\n\nUser-agent: BarBot\nAllow: /\nDisallow: /admin\n\nSitemap: https://site-%05d.example/sitemap.xml\n", i)
	return []byte(b.String())
}

// expectedJudgement is what benchBody(i) decides for agent on target (or,
// for a blind tunnel's CONNECT, on the host), worked out by hand from how
// benchBody writes the file, not with the robots package: the corpus'
// decisions must not come from the code verify replays with, or a broken
// replay would write the same mistakes it then agrees with. The agents are
// benchAgents': ResearchBot has no group of its own (the "*" group),
// FooBot's group disallows everything, BarBot's allows all but /admin.
func expectedJudgement(i int, agent, target string, connect bool) Judgement {
	body := string(benchBody(i))
	rule := func(allowed bool, r string) Judgement {
		for n, l := range strings.Split(body, "\n") {
			if l == r {
				return Judgement{Allowed: allowed, Rule: r, Line: n + 1}
			}
		}
		panic("benchBody has no line " + r)
	}
	switch {
	case strings.HasPrefix(agent, "FooBot"):
		return rule(false, "Disallow: /")
	case agent == "BarBot":
		if !connect && strings.HasPrefix(target, "/admin") {
			return rule(false, "Disallow: /admin")
		}
		return rule(true, "Allow: /")
	case connect: // the "*" group refuses some paths, not all; no rule matches "/"
		return Judgement{Allowed: true}
	}
	private := fmt.Sprintf("/private-%d/", i)
	switch {
	case strings.HasPrefix(target, private+"public/"): // the longer rule wins
		return rule(true, "Allow: "+private+"public/")
	case strings.HasPrefix(target, private):
		return rule(false, "Disallow: "+private)
	case strings.HasPrefix(target, "/search"):
		return rule(false, "Disallow: /search")
	case strings.HasSuffix(target, ".pdf"):
		return rule(false, "Disallow: /*.pdf$")
	case strings.HasPrefix(target, "/section-"):
		// Sections 0 to 29 of the origin are disallowed, one rule each.
		var k int
		if _, err := fmt.Sscanf(strings.TrimPrefix(target, fmt.Sprintf("/section-%d-", i)), "%d/", &k); err == nil && k < 30 {
			return rule(false, fmt.Sprintf("Disallow: /section-%d-%d/", i, k))
		}
	}
	return Judgement{Allowed: true}
}

var benchAgents = []struct{ ua, agent string }{
	{"Mozilla/5.0 (compatible; ResearchBot/1.0; +https://research.example/bot)", "Mozilla/5.0 (compatible; ResearchBot/1.0; +https://research.example/bot)"},
	{"FooBot/2.1", "FooBot/2.1"},
	{"python-requests/2.32", "BarBot"}, // a client with a fixed agent
}

// writeCorpus writes under dir an archive (dir/archive: a robots.txt
// body for each of origins origins, stored with archive.Writer) and an
// audit log (dir/audit.log: lines records, JSON lines of
// audit.Record) whose decisions are the ones the bodies give, with
// the mix of a crawl: allowed and disallowed paths, rate-limited and
// monitor-mode records, CONNECTs judged by host, and records that do not
// rest on robots.txt (robots.txt itself). It returns the audit log's path
// and how many records rest on robots.txt.
func writeCorpus(tb testing.TB, dir string, lines, origins int) (string, int) {
	tb.Helper()
	arch := filepath.Join(dir, "archive")
	sums := make([]string, origins)
	var w *archive.Writer
	for i := range origins {
		if i%512 == 0 { // the writer's queue drops beyond 1024 waiting records
			if w != nil {
				w.Close()
			}
			var err error
			if w, err = archive.Open(arch, nil, func(err error) { tb.Error(err) }); err != nil {
				tb.Fatal(err)
			}
		}
		body := benchBody(i)
		sums[i] = archive.Sum(body)
		origin := fmt.Sprintf("https://site-%05d.example", i)
		if !w.Record(archive.Fetch{Time: time.Now().UTC(), Origin: origin, RobotsURL: origin + "/robots.txt", FinalURL: origin + "/robots.txt",
			HTTPStatus: 200, Outcome: "ok", SHA256: sums[i], Size: len(body)}, body) {
			tb.Fatal("archive: a record was dropped")
		}
	}
	w.Close()

	auditPath := filepath.Join(dir, "audit.log")
	// Written as the proxy writes it: chained, a checkpoint every 10,000
	// records, signed with benchKey.
	aw, err := auditlog.Open(auditPath, auditlog.Options{Key: benchKey, CheckpointRecords: 10_000, CheckpointEvery: 1 << 62})
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	judged := 0
	for n := range lines {
		i := (n * 7919) % origins // origins interleaved, as a crawl of many sites is
		a := benchAgents[n%len(benchAgents)]
		origin := fmt.Sprintf("https://site-%05d.example", i)
		var target string
		switch n % 8 {
		case 0:
			target = fmt.Sprintf("/private-%d/page-%d", i, n)
		case 1:
			target = fmt.Sprintf("/private-%d/public/page-%d", i, n)
		case 2:
			target = fmt.Sprintf("/search?q=term-%d", n)
		case 3:
			target = fmt.Sprintf("/papers/paper-%d.pdf", n)
		case 4:
			target = fmt.Sprintf("/section-%d-%d/item-%d", i, n%40, n)
		case 5:
			target = fmt.Sprintf("/admin/user-%d", n)
		default:
			target = fmt.Sprintf("/articles/%d/%d?ref=home", n%1000, n)
		}
		rec := audit.Record{
			Time: start.Add(time.Duration(n) * time.Millisecond), Client: "10.0.0.5:" + strconv.Itoa(40000+n%20000),
			Mode: "enforce", UserAgent: a.ua, Agent: a.agent, Method: "GET", URL: origin + target,
			RobotsStatus: "ok", RobotsURL: origin + "/robots.txt", RobotsSHA256: sums[i], StrictPaths: true,
			UpstreamStatus: 200, Status: 200, Bytes: 12345, DurationMS: 87.5, Enforced: true,
		}
		if a.agent == "BarBot" {
			rec.ClientRule = "crawler"
		}
		switch {
		case n%50 == 7: // robots.txt itself: not judged by robots.txt
			rec.URL, rec.Note, rec.RobotsStatus, rec.RobotsURL, rec.RobotsSHA256 = origin+"/robots.txt", "robots.txt itself is always allowed", "", "", ""
			rec.Decision = "allow"
		case n%50 == 9: // a blind tunnel, judged by host
			rec.Method, rec.URL, rec.StrictPaths = "CONNECT", origin+":443/", false
			fallthrough
		default:
			j := expectedJudgement(i, a.agent, target, rec.Method == "CONNECT")
			rec.Rule, rec.Line = j.Rule, j.Line
			rec.Decision = "allow"
			if !j.Allowed {
				rec.Decision, rec.Status, rec.UpstreamStatus, rec.Bytes = "disallow", 403, 0, 200
			}
			if n%97 == 3 && j.Allowed {
				rec.Decision, rec.Status, rec.UpstreamStatus = "rate-limited", 429, 0
			}
			if n%31 == 5 {
				rec.Mode, rec.Enforced, rec.Status = "monitor", false, 200
			}
			judged++
		}
		if err := aw.Write(&rec); err != nil {
			tb.Fatal(err)
		}
	}
	if err := aw.Close(); err != nil {
		tb.Fatal(err)
	}
	return auditPath, judged
}

// benchKey signs the corpus' checkpoints (a fixed seed: the corpus is the
// same from run to run).
var benchKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// verifyChain checks the corpus' chain and checkpoints as robotsgate
// verify does.
func verifyChain(tb testing.TB, auditPath string) {
	r, err := CheckChain([]string{auditPath}, ChainOptions{Key: benchKey.Public().(ed25519.PublicKey)})
	if err != nil {
		tb.Fatal(err)
	}
	if !r.Whole() || r.Checkpoints == 0 || r.Unsigned != 0 {
		tb.Fatalf("the corpus' chain: %d breaks, %d checkpoints, %d bad, %d lines unsigned",
			len(r.Breaks), r.Checkpoints, len(r.BadCheckpoints), r.Unsigned)
	}
}

// verifyAll is what robotsgate verify does with the corpus: the replay,
// then the chain.
func verifyAll(tb testing.TB, dir, auditPath string) (verified int) {
	defer verifyChain(tb, auditPath)
	bodies := NewBodies(filepath.Join(dir, "archive"))
	err := VerifyAudit([]string{auditPath}, bodies, 0, func(rec *audit.Record, file string, line int, v Verification) error {
		switch v.Outcome {
		case Verified:
			verified++
		case Disagrees, Unverifiable:
			return fmt.Errorf("%s:%d: %+v", file, line, v)
		}
		return nil
	}, func(file string, line int, err error) { tb.Errorf("%s:%d: skipped: %v", file, line, err) })
	if err != nil {
		tb.Fatal(err)
	}
	return verified
}

// outcomes verifies the audit log at auditPath against dir's archive and
// returns the line numbers of each outcome.
func outcomes(tb testing.TB, dir, auditPath string) map[Outcome][]int {
	out := map[Outcome][]int{}
	err := VerifyAudit([]string{auditPath}, NewBodies(filepath.Join(dir, "archive")), 0, func(_ *audit.Record, _ string, line int, v Verification) error {
		out[v.Outcome] = append(out[v.Outcome], line)
		return nil
	}, func(file string, line int, err error) { tb.Errorf("%s:%d: skipped: %v", file, line, err) })
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// BenchmarkVerify verifies an audit log of ROBOTSGATE_VERIFY_LINES records
// (default 200,000) over 10,000 origins, as robotsgate verify does
// (reading, JSON decoding, each body read and parsed once, the replay,
// then the hash chain and the checkpoints' signatures), and reports
// lines/s.
func BenchmarkVerify(b *testing.B) {
	lines := 200_000
	if v, err := strconv.Atoi(os.Getenv("ROBOTSGATE_VERIFY_LINES")); err == nil && v > 0 {
		lines = v
	}
	dir := b.TempDir()
	auditPath, judged := writeCorpus(b, dir, lines, benchOrigins)
	if st, err := os.Stat(auditPath); err == nil {
		b.SetBytes(st.Size())
	}
	for b.Loop() {
		if got := verifyAll(b, dir, auditPath); got != judged {
			b.Fatalf("%d verified, want %d", got, judged)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// TestVerifyCorpus: the benchmark's corpus, whose decisions are worked out
// by hand (expectedJudgement), verifies, every record resting on
// robots.txt; and the same log with some decisions turned around, or a
// disallow naming the wrong line, disagrees on exactly those records.
func TestVerifyCorpus(t *testing.T) {
	dir := t.TempDir()
	auditPath, judged := writeCorpus(t, dir, 5000, 300)
	if got := verifyAll(t, dir, auditPath); got != judged || judged < 4500 {
		t.Errorf("%d verified, want %d (of 5000)", got, judged)
	}

	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var tampered []byte
	var want []int
	var allowsFlipped, disallowsFlipped, linesMoved int
	for n, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var rec audit.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.RobotsSHA256 != "" && n%10 == 0 {
			switch rec.Decision {
			case "disallow":
				if n%20 == 0 {
					rec.Decision, rec.Rule, rec.Line = "allow", "", 0
					disallowsFlipped++
				} else {
					rec.Line++
					linesMoved++
				}
			default:
				rec.Decision = "disallow"
				allowsFlipped++
			}
			want = append(want, n+1)
		}
		b, err := json.Marshal(&rec)
		if err != nil {
			t.Fatal(err)
		}
		tampered = append(append(tampered, b...), '\n')
	}
	if allowsFlipped == 0 || disallowsFlipped == 0 || linesMoved == 0 {
		t.Fatalf("the tampering covers too little: %d allows and %d disallows turned around, %d lines moved", allowsFlipped, disallowsFlipped, linesMoved)
	}
	bad := filepath.Join(dir, "tampered.log")
	if err := os.WriteFile(bad, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	got := outcomes(t, dir, bad)
	if !slices.Equal(got[Disagrees], want) || len(got[Unverifiable]) != 0 || len(got[Verified]) != judged-len(want) {
		t.Errorf("tampered log: %d disagree (want the %d tampered records), %d unverifiable, %d verified (want %d)",
			len(got[Disagrees]), len(want), len(got[Unverifiable]), len(got[Verified]), judged-len(want))
	}
}

// TestVerifyMemoryDoesNotGrowWithTheLog: verify streams, so its live heap
// after 15,000 lines over 300 bodies is about what it was after 3,000 (the
// docs: memory grows with the distinct bodies, not with the log); every
// body is in use within the first 300 lines. Kept per record, even 200
// bytes each would add over 2 MB in the 12,000 lines between.
func TestVerifyMemoryDoesNotGrowWithTheLog(t *testing.T) {
	dir := t.TempDir()
	const lines, early = 15_000, 3_000
	auditPath, _ := writeCorpus(t, dir, lines, 300)
	live := map[int]uint64{early: 0, lines: 0}
	n := 0
	err := VerifyAudit([]string{auditPath}, NewBodies(filepath.Join(dir, "archive")), 0, func(*audit.Record, string, int, Verification) error {
		n++
		if _, ok := live[n]; ok {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			live[n] = ms.HeapAlloc
		}
		return nil
	}, func(string, int, error) {})
	if err != nil || n != lines {
		t.Fatalf("%d of %d records, %v", n, lines, err)
	}
	t.Logf("live heap: %.2f MB after %d lines, %.2f MB after %d", float64(live[early])/(1<<20), early, float64(live[lines])/(1<<20), lines)
	if live[lines] > live[early]+2<<20 {
		t.Errorf("the live heap grows with the log: %d bytes after %d lines, %d after %d", live[early], early, live[lines], lines)
	}
}

// TestWriteVerifyCorpus writes the benchmark's corpus where
// ROBOTSGATE_VERIFY_CORPUS says (skipped without it), to measure the real
// binary, e.g. its peak RSS:
//
//	ROBOTSGATE_VERIFY_CORPUS=/tmp/corpus ROBOTSGATE_VERIFY_LINES=1000000 \
//		go test -run TestWriteVerifyCorpus ./compliance/
//	/usr/bin/time -v robotsgate verify -audit /tmp/corpus/audit.log -archive /tmp/corpus/archive
func TestWriteVerifyCorpus(t *testing.T) {
	dir := os.Getenv("ROBOTSGATE_VERIFY_CORPUS")
	if dir == "" {
		t.Skip("ROBOTSGATE_VERIFY_CORPUS names no directory to write the corpus to")
	}
	lines := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("ROBOTSGATE_VERIFY_LINES")); err == nil && v > 0 {
		lines = v
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	auditPath, judged := writeCorpus(t, dir, lines, benchOrigins)
	t.Logf("%s: %d records, %d resting on robots.txt; archive %s", auditPath, lines, judged, filepath.Join(dir, "archive"))
}

// BenchmarkCheckChain is the hash chain's share of BenchmarkVerify: the
// same log, only its chain and checkpoints checked.
func BenchmarkCheckChain(b *testing.B) {
	lines := 200_000
	if v, err := strconv.Atoi(os.Getenv("ROBOTSGATE_VERIFY_LINES")); err == nil && v > 0 {
		lines = v
	}
	auditPath, _ := writeCorpus(b, b.TempDir(), lines, benchOrigins)
	for b.Loop() {
		verifyChain(b, auditPath)
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
