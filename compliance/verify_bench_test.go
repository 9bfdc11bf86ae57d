package compliance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
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
	files := make([]*robots.File, origins)
	sums := make([]string, origins)
	var w *archive.Writer
	for i := range origins {
		if i%512 == 0 { // the writer's queue drops beyond 1024 waiting records
			if w != nil {
				w.Close()
			}
			var err error
			if w, err = archive.Open(arch, func(err error) { tb.Error(err) }); err != nil {
				tb.Fatal(err)
			}
		}
		body := benchBody(i)
		sums[i], files[i] = archive.Sum(body), robots.Parse(body)
		origin := fmt.Sprintf("https://site-%05d.example", i)
		if !w.Record(archive.Fetch{Time: time.Now().UTC(), Origin: origin, RobotsURL: origin + "/robots.txt", FinalURL: origin + "/robots.txt",
			HTTPStatus: 200, Outcome: "ok", SHA256: sums[i], Size: len(body)}, body) {
			tb.Fatal("archive: a record was dropped")
		}
	}
	w.Close()

	auditPath := filepath.Join(dir, "audit.log")
	f, err := os.Create(auditPath)
	if err != nil {
		tb.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
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
			j := ReplayJudgement(files[i], &rec)
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
		line, err := json.Marshal(&rec)
		if err != nil {
			tb.Fatal(err)
		}
		bw.Write(append(line, '\n'))
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return auditPath, judged
}

// verifyAll is what robotsgate verify does with the corpus.
func verifyAll(tb testing.TB, dir, auditPath string) (verified int) {
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

// BenchmarkVerify verifies an audit log of ROBOTSGATE_VERIFY_LINES records
// (default 200,000) over 10,000 origins, as robotsgate verify does
// (reading, JSON decoding, each body read and parsed once, the replay),
// and reports lines/s.
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

// TestVerifyCorpus: the benchmark's corpus verifies, every record resting
// on robots.txt.
func TestVerifyCorpus(t *testing.T) {
	dir := t.TempDir()
	auditPath, judged := writeCorpus(t, dir, 5000, 300)
	if got := verifyAll(t, dir, auditPath); got != judged || judged < 4500 {
		t.Errorf("%d verified, want %d (of 5000)", got, judged)
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
