package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
)

// t0 is the start of the generated traffic.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const sec = time.Second

// writeAudit writes records as an audit log (JSON lines, as the proxy
// writes them) and returns its path.
func writeAudit(t *testing.T, dir, name string, recs []audit.Record) string {
	t.Helper()
	var buf bytes.Buffer
	for i := range recs {
		line, err := json.Marshal(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeArchive stores bodies and fetches in a new archive in dir.
func writeArchive(t *testing.T, dir string, fetches []archive.Fetch, bodies map[string][]byte) {
	t.Helper()
	w, err := archive.Open(dir, nil, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fetches {
		w.Record(f, bodies[f.SHA256])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// allowed is a forwarded request of an enforced client, arrived at
// arrival and held wait.
func allowed(url, sha string, arrival, wait time.Duration) audit.Record {
	return audit.Record{
		Time: at(arrival), Client: "10.0.0.5:40000", Mode: "enforce", UserAgent: "ResearchBot/2.0", Agent: "ResearchBot/2.0",
		Group: "*", Method: "GET", URL: url, Decision: "allow", Enforced: true, RobotsStatus: "ok", RobotsSHA256: sha,
		WaitMS: float64(wait.Microseconds()) / 1000, SentMS: float64((wait + time.Millisecond).Microseconds()) / 1000, UpstreamStatus: 200, Status: 200,
		DurationMS: float64((wait + 20*time.Millisecond).Microseconds()) / 1000,
	}
}

func refused(url, sha, rule string, line int, arrival time.Duration) audit.Record {
	r := allowed(url, sha, arrival, 0)
	r.Decision, r.Rule, r.Line, r.UpstreamStatus, r.Status = "disallow", rule, line, 0, 403
	return r
}

func secondsOf(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestGapsInAndOutOfOrder: the gaps between sends are those of the sends
// sorted by time, whatever order they are added in (within the window);
// the smallest gap, the count below the interval and the histogram follow.
func TestGapsInAndOutOfOrder(t *testing.T) {
	const ms = int64(time.Millisecond)
	asked := 500 * ms
	times := []int64{0, 505, 1010, 1600, 1900, 3000} // gaps 505 505 590 300 1100
	for name, order := range map[string][]int{
		"in order":  {0, 1, 2, 3, 4, 5},
		"reversed":  {5, 4, 3, 2, 1, 0},
		"shuffled":  {2, 0, 5, 1, 4, 3},
		"late last": {1, 2, 3, 4, 5, 0},
	} {
		var w gapWindow
		var g gapStats
		for _, i := range order {
			if !w.add(send{at: times[i] * ms, asked: asked}, &g) {
				t.Fatalf("%s: send %d not placed", name, i)
			}
		}
		if g.gaps != 5 || g.below != 1 || g.minGap != 300*ms || g.minAsked != asked || g.minRatio != 0.6 {
			t.Errorf("%s: %d gaps, %d below, min %v (asked %v), ratio %v; want 5, 1, 300ms (500ms), 0.6",
				name, g.gaps, g.below, time.Duration(g.minGap), time.Duration(g.minAsked), g.minRatio)
		}
		want := map[float64]int64{0.5: 1, 1.01: 2, 1.1: 1, 2: 1} // 0.6; 1.01 twice; 1.18; 2.2
		for i, n := range g.buckets {
			if n != want[ratioEdges[i]] {
				t.Errorf("%s: bucket from %v has %d gaps, want %d", name, ratioEdges[i], n, want[ratioEdges[i]])
			}
		}
	}
}

// TestGapsWithoutInterval: a gap whose later request had no interval
// asked is not counted; the sends still place the others.
func TestGapsWithoutInterval(t *testing.T) {
	var w gapWindow
	var g gapStats
	w.add(send{at: 0, asked: 0}, &g)
	w.add(send{at: 100, asked: 0}, &g)     // no interval: not counted
	w.add(send{at: 1100, asked: 1000}, &g) // 1000 after 100: kept
	w.add(send{at: 1200, asked: 1000}, &g) // 100: below
	if g.gaps != 2 || g.below != 1 || g.minGap != 100 {
		t.Errorf("%d gaps, %d below, min %d; want 2, 1, 100", g.gaps, g.below, g.minGap)
	}
}

// TestGapsWindow: past the window, a send older than every send kept
// cannot be placed (late); one between the latest dropped and the oldest
// kept still is.
func TestGapsWindow(t *testing.T) {
	var w gapWindow
	var g gapStats
	const step = 1000
	for i := range reorderWindow + 10 {
		w.add(send{at: int64(i+1) * step, asked: step}, &g)
	}
	if len(w.sends) != reorderWindow || !w.hasDropped || w.dropped != 10*step {
		t.Fatalf("window %d sends, dropped %v at %d", len(w.sends), w.hasDropped, w.dropped)
	}
	if w.add(send{at: 5 * step, asked: step}, &g) {
		t.Error("a send older than the dropped ones was placed")
	}
	if !w.add(send{at: 10*step + 400, asked: step}, &g) {
		t.Error("a send between the last dropped and the oldest kept was not placed")
	}
	// 10 000 → 10 400 → 11 000: gaps 400 and 600 replace 1000.
	if g.gaps != reorderWindow+10 || g.below != 2 || g.minGap != 400 {
		t.Errorf("%d gaps, %d below, min %d; want %d, 2, 400", g.gaps, g.below, g.minGap, reorderWindow+10)
	}
}

// TestBuild: the figures of generated traffic on two origins: one asks
// for a Crawl-delay (its requests held, logged out of order, one sent too
// soon), the other disallows paths, with two robots.txt versions.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "archive")
	// (A rule ends a group: without one, Google's parser would merge the
	// second group into the first.)
	slowBody := []byte("User-agent: *\nCrawl-delay: 0.5\nDisallow: /cgi-bin/\n\nUser-agent: OtherBot\nCrawl-delay: 3\nDisallow: /cgi-bin/\n")
	v1 := []byte("User-agent: *\nDisallow: /private\n")
	v2 := []byte("# version 2\nUser-agent: *\nDisallow: /private\nDisallow: /drafts\n")
	slowSHA, v1SHA, v2SHA := archive.Sum(slowBody), archive.Sum(v1), archive.Sum(v2)
	slow, site := "http://slow.example", "https://site.example:8443"
	writeArchive(t, arch, []archive.Fetch{
		{Time: at(-time.Hour), Origin: slow, HTTPStatus: 200, Outcome: "ok", SHA256: slowSHA, Size: len(slowBody), CacheControl: "max-age=86400"},
		{Time: at(-time.Minute), Origin: site, HTTPStatus: 200, Outcome: "ok", SHA256: v1SHA, Size: len(v1), ETag: `"v1"`},
		{Time: at(5 * sec), Origin: site, HTTPStatus: 304, Outcome: "ok", SHA256: v1SHA, Size: len(v1), ETag: `"v1"`},
		{Time: at(10 * sec), Origin: site, HTTPStatus: 200, Outcome: "ok", SHA256: v2SHA, Size: len(v2), ETag: `"v2"`},
		{Time: at(time.Hour), Origin: site, HTTPStatus: 200, Outcome: "ok", SHA256: v2SHA}, // after -until
		{Time: at(time.Second), Origin: "http://elsewhere.example", HTTPStatus: 200, Outcome: "ok"},
	}, map[string][]byte{slowSHA: slowBody, v1SHA: v1, v2SHA: v2})

	ms := time.Millisecond
	recs := []audit.Record{
		// Before -since: left out.
		allowed(slow+"/early", slowSHA, -2*sec, 0),
		// Four requests arriving together, held 0, 505, 1010, 1515 ms,
		// the first logged last (a long response).
		allowed(slow+"/b", slowSHA, 0, 505*ms),
		allowed(slow+"/c", slowSHA, 0, 1010*ms),
		allowed(slow+"/d", slowSHA, 10*ms, 1505*ms),
		allowed(slow+"/a", slowSHA, 0, 0),
		// Too soon: 300 ms after /d left.
		allowed(slow+"/e", slowSHA, 1815*ms, 0),
		// OtherBot has its own schedule (3 s), one request.
		func() audit.Record {
			r := allowed(slow+"/other", slowSHA, 100*ms, 0)
			r.Agent, r.Group = "OtherBot", "OtherBot"
			return r
		}(),
		// Not paced: robots.txt itself, a monitored client.
		func() audit.Record {
			r := allowed(slow+"/robots.txt", "", 200*ms, 0)
			r.RobotsStatus = "" // not consulted
			return r
		}(),
		func() audit.Record {
			r := allowed(slow+"/monitored", slowSHA, 1820*ms, 0)
			r.Mode = "monitor"
			return r
		}(),
		refused(site+"/private/1", v1SHA, "Disallow: /private", 2, 1*sec),
		refused(site+"/private/2", v1SHA, "Disallow: /private", 2, 2*sec),
		allowed(site+"/public", v1SHA, 3*sec, 0),
		refused(site+"/private/3", v2SHA, "Disallow: /private", 3, 11*sec),
		refused(site+"/drafts/x", v2SHA, "Disallow: /drafts", 4, 12*sec),
		func() audit.Record { // only logged
			r := refused(site+"/drafts/y", v2SHA, "Disallow: /drafts", 4, 13*sec)
			r.Mode, r.Enforced, r.UpstreamStatus, r.Status = "monitor", false, 200, 200
			return r
		}(),
		func() audit.Record {
			r := allowed(site+"/gone", v2SHA, 14*sec, 0)
			r.Decision, r.UpstreamStatus, r.Status = "upstream-error", 0, 502
			return r
		}(),
		func() audit.Record { // refused before it was judged
			return audit.Record{Time: at(15 * sec), Client: "10.0.0.9:5000", Method: "CONNECT", URL: "//10.1.1.1:22",
				Decision: "egress-denied", Enforced: true, Status: 403}
		}(),
		// After -until: left out.
		allowed(slow+"/late", slowSHA, time.Minute, 0),
	}
	auditPath := writeAudit(t, dir, "audit.log", recs)
	r, err := Build(Options{Audit: []string{auditPath}, Archive: arch, Since: at(0), Until: at(30 * sec), Now: at(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}

	if r.Records != int64(len(recs)-2) || r.OutOfRange != 2 {
		t.Errorf("%d records in range, %d out; want %d, 2", r.Records, r.OutOfRange, len(recs)-2)
	}
	if !r.First.Equal(at(0)) || !r.Last.Equal(at(15*sec)) {
		t.Errorf("period %v to %v, want %v to %v", r.First, r.Last, at(0), at(15*sec))
	}
	// The CONNECT refused is a tunnel, not a request.
	wantTotals := Counts{Requests: 15, Allowed: 9, Forwarded: 10, Refused: 4, Monitored: 1, Other: 1, Tunnels: Tunnels{Refused: 1}}
	if r.Totals != wantTotals {
		t.Errorf("totals %+v, want %+v", r.Totals, wantTotals)
	}
	var decisions []string
	for _, d := range r.Decisions {
		decisions = append(decisions, fmt.Sprintf("%s=%d", d.Decision, d.Count))
	}
	if got := strings.Join(decisions, " "); got != "allow=9 disallow=5 upstream-error=1" {
		t.Errorf("decisions %s", got)
	}
	// The CONNECT is its client's tunnel, not a request, and no agent's.
	if len(r.Clients) != 2 || r.Clients[0] != (Client{Address: "10.0.0.5", Requests: 15}) || r.Clients[1] != (Client{Address: "10.0.0.9", Tunnels: 1}) {
		t.Errorf("clients %+v", r.Clients)
	}
	if len(r.Agents) != 2 || r.Agents[0].Agent != "ResearchBot/2.0" || r.Agents[0].Requests != 14 {
		t.Errorf("agents %+v", r.Agents)
	}
	var tlTotal int64
	for _, b := range r.Timeline.Bins {
		tlTotal += b.Allowed + b.Refused + b.Other
	}
	if tlTotal != r.Records-r.Totals.Tunnels.Total() {
		t.Errorf("the timeline counts %d records, want %d (the records but the tunnel)", tlTotal, r.Records-r.Totals.Tunnels.Total())
	}

	origins := map[string]Origin{}
	for _, o := range r.Origins {
		origins[o.Origin] = o
	}
	if len(origins) != 3 || r.Origins[0].Origin != slow {
		t.Fatalf("origins %v, busiest first %s", slices.Collect(mapKeys(origins)), r.Origins[0].Origin)
	}

	// The paced origin.
	s := origins[slow]
	var star, other PacingKey
	for _, k := range s.Pacing {
		switch k.Group {
		case "*":
			star = k
		case "OtherBot":
			other = k
		}
	}
	if star.Paced != 5 || star.NotPaced != 2 || star.Gaps != 4 || star.BelowAsked != 1 || star.Late != 0 {
		t.Errorf("group *: %d paced, %d not, %d gaps, %d below, %d late; want 5, 2, 4, 1, 0", star.Paced, star.NotPaced, star.Gaps, star.BelowAsked, star.Late)
	}
	if g := secondsOf(star.MinGapSeconds); math.Abs(g-0.3) > 1e-9 || secondsOf(star.MinGapAskedSeconds) != 0.5 || secondsOf(star.MinRatio) != 0.6 {
		t.Errorf("group *: smallest gap %v s (asked %v s, ratio %v), want 0.3 s, 0.5 s, 0.6", g, secondsOf(star.MinGapAskedSeconds), secondsOf(star.MinRatio))
	}
	if len(star.Asked) != 1 || star.Asked[0] != (Asked{SHA256: slowSHA, CrawlDelaySeconds: 0.5, IntervalSeconds: 0.5, Requests: 5}) {
		t.Errorf("group * asked %+v", star.Asked)
	}
	if star.LongestHoldMS != 1505 || s.LongestHoldMS != 1505 {
		t.Errorf("longest hold %v (origin %v), want 1505 ms", star.LongestHoldMS, s.LongestHoldMS)
	}
	if other.Paced != 1 || other.Gaps != 0 || other.MinGapSeconds != nil || len(other.Asked) != 1 || other.Asked[0].CrawlDelaySeconds != 3 {
		t.Errorf("group OtherBot: %+v", other)
	}
	if s.Gaps.Gaps != 4 || s.Gaps.BelowAsked != 1 || r.Pacing.BelowAsked != 1 || r.Pacing.Gaps != 4 {
		t.Errorf("origin gaps %+v, summary %+v", s.Gaps, r.Pacing)
	}
	// 505, 505, 505 ms: 1.01; 300 ms: 0.6.
	for _, b := range s.Gaps.Histogram.Buckets {
		want := map[float64]int64{0.5: 1, 1.01: 3}[b.From]
		if b.Count != want {
			t.Errorf("histogram bucket from %v: %d, want %d", b.From, b.Count, want)
		}
	}
	if len(s.Versions) != 1 || s.Versions[0].SHA256 != slowSHA || s.Versions[0].Records != 7 || !s.Versions[0].FirstFetched.Equal(at(-time.Hour)) ||
		s.Versions[0].Fetches != 0 || !s.Versions[0].InArchive {
		t.Errorf("slow origin versions %+v", s.Versions)
	}

	// The origin with disallowed paths and two versions.
	o := origins[site]
	var rules []string
	for _, rc := range o.RefusedByRule {
		rules = append(rules, fmt.Sprintf("%s|%d|%s|%d|%d|%s", rc.Rule, rc.Line, short12(rc.SHA256), rc.Count, rc.Monitored, rc.Example))
	}
	wantRules := []string{
		"Disallow: /private|2|" + short12(v1SHA) + "|2|0|" + site + "/private/1",
		"Disallow: /drafts|4|" + short12(v2SHA) + "|1|1|" + site + "/drafts/x",
		"Disallow: /private|3|" + short12(v2SHA) + "|1|0|" + site + "/private/3",
	}
	if !slices.Equal(rules, wantRules) {
		t.Errorf("refused by rule:\n%s\nwant\n%s", strings.Join(rules, "\n"), strings.Join(wantRules, "\n"))
	}
	if o.Refused != 4 || o.Monitored != 1 || o.Other != 1 || o.Allowed != 1 {
		t.Errorf("site counts %+v", o.Counts)
	}
	if len(o.Versions) != 2 {
		t.Fatalf("site versions %+v", o.Versions)
	}
	first, second := o.Versions[0], o.Versions[1]
	if first.SHA256 != v1SHA || first.Records != 3 || first.Fetches != 1 || first.Revalidations != 1 ||
		!slices.Equal(first.HTTPStatuses, []int{200, 304}) || first.HTTPStatus != 200 || first.ETag != `"v1"` ||
		!first.FirstFetched.Equal(at(-time.Minute)) || !first.LastFetched.Equal(at(5*sec)) || !first.LastUsed.Equal(at(3*sec)) {
		t.Errorf("version 1: %+v", first)
	}
	if second.SHA256 != v2SHA || second.Records != 4 || second.Fetches != 1 || !second.LastFetched.Equal(at(10*sec)) {
		t.Errorf("version 2 (the fetch after -until left out): %+v", second)
	}
	if o.Gaps.Gaps != 0 || len(o.Pacing) != 1 || o.Pacing[0].Paced != 1 || len(o.Pacing[0].Asked) != 1 || o.Pacing[0].Asked[0].IntervalSeconds != 0 {
		t.Errorf("site pacing %+v", o.Pacing)
	}
	if _, ok := origins["10.1.1.1:22"]; !ok {
		t.Error("the CONNECT refused before it was judged is not counted under what it named")
	}

	if len(r.Bodies) != 3 || r.Bodies[0].SHA256 != slowSHA || r.Bodies[1].SHA256 != v1SHA || r.Bodies[2].SHA256 != v2SHA ||
		r.Bodies[1].Size != int64(len(v1)) || !slices.Equal(r.Bodies[1].Origins, []string{site}) {
		t.Errorf("bodies %+v", r.Bodies)
	}
	if len(r.Notes) != 0 {
		t.Errorf("notes %q", r.Notes)
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestBuildMergesFiles: two proxies' logs, overlapping in time, are read
// as one: the gaps are those between their requests, interleaved.
func TestBuildMergesFiles(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "archive")
	body := []byte("User-agent: *\nCrawl-delay: 1\n")
	sha := archive.Sum(body)
	writeArchive(t, arch, []archive.Fetch{{Time: at(0), Origin: "http://a.example", HTTPStatus: 200, Outcome: "ok", SHA256: sha}}, map[string][]byte{sha: body})
	var one, two []audit.Record
	for i := range 20 {
		r := allowed(fmt.Sprintf("http://a.example/%d", i), sha, time.Duration(i)*1010*time.Millisecond, 0)
		if i%2 == 0 {
			one = append(one, r)
		} else {
			two = append(two, r)
		}
	}
	files := []string{writeAudit(t, dir, "one.log", one), writeAudit(t, dir, "two.log", two)}
	r, err := Build(Options{Audit: files, Archive: arch})
	if err != nil {
		t.Fatal(err)
	}
	g := r.Origins[0].Gaps
	if g.Gaps != 19 || g.BelowAsked != 0 || math.Abs(secondsOf(g.MinGapSeconds)-1.01) > 1e-9 || r.Pacing.Late != 0 {
		t.Errorf("gaps %+v, late %d; want 19 gaps of 1.01 s", g, r.Pacing.Late)
	}
}

// TestBuildSkipsOtherFiles: the fetch lines of other files of an origin
// (tdmrep.json) are not robots.txt versions.
func TestBuildSkipsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "archive")
	body, tdm := []byte("User-agent: *\nAllow: /\n"), []byte(`[{"location":"/","tdm-reservation":1}]`)
	sha, tdmSHA := archive.Sum(body), archive.Sum(tdm)
	writeArchive(t, arch, []archive.Fetch{
		{Time: at(0), Origin: "http://a.example", RobotsURL: "http://a.example/robots.txt", HTTPStatus: 200, Outcome: "ok", SHA256: sha},
		{Time: at(sec), Origin: "http://a.example", RobotsURL: "http://a.example/.well-known/tdmrep.json", HTTPStatus: 200, Outcome: "ok", SHA256: tdmSHA},
	}, map[string][]byte{sha: body, tdmSHA: tdm})
	auditPath := writeAudit(t, dir, "audit.log", []audit.Record{allowed("http://a.example/1", sha, 2*sec, 0)})
	r, err := Build(Options{Audit: []string{auditPath}, Archive: arch})
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Origins[0].Versions; len(v) != 1 || v[0].SHA256 != sha {
		t.Errorf("versions %+v, want robots.txt's only", v)
	}
}

// TestBuildWithoutBodies: without the archive, or without a body, the
// interval asked is unknown and said so; nothing is counted as kept.
func TestBuildWithoutBodies(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "archive")
	if err := os.MkdirAll(arch, 0o755); err != nil {
		t.Fatal(err)
	}
	auditPath := writeAudit(t, dir, "audit.log", []audit.Record{
		allowed("http://a.example/1", archive.Sum([]byte("gone")), 0, 0),
		allowed("http://a.example/2", archive.Sum([]byte("gone")), sec, 0),
	})
	for _, dir := range []string{arch, ""} {
		r, err := Build(Options{Audit: []string{auditPath}, Archive: dir})
		if err != nil {
			t.Fatal(err)
		}
		k := r.Origins[0].Pacing[0]
		if k.AskedUnknown != 2 || k.Gaps != 0 || r.Pacing.AskedUnknown != 2 || len(r.Notes) == 0 || !r.Bodies[0].Missing {
			t.Errorf("archive %q: key %+v, notes %q, bodies %+v", dir, k, r.Notes, r.Bodies)
		}
	}
}

// TestTimeline: bins widen as the period grows, never more than maxBins,
// and keep every record.
func TestTimeline(t *testing.T) {
	var tl timeline
	tl.add(at(0), true, false)
	tl.add(at(150*time.Millisecond), false, true)
	if st := tl.state(100); st.BinSeconds != 0.1 || len(st.Bins) != 2 || !st.Start.Equal(at(0)) {
		t.Errorf("two records 150 ms apart: %+v", st)
	}
	tl.add(at(-time.Hour), false, false) // out of order, earlier
	tl.add(at(48*time.Hour), true, false)
	if len(tl.bins) > maxBins {
		t.Errorf("%d bins", len(tl.bins))
	}
	st := tl.state(120)
	var allowed, refused, other int64
	for _, b := range st.Bins {
		allowed, refused, other = allowed+b.Allowed, refused+b.Refused, other+b.Other
	}
	if allowed != 2 || refused != 1 || other != 1 || len(st.Bins) > 120 {
		t.Errorf("%d bins of %v s: %d allowed, %d refused, %d other", len(st.Bins), st.BinSeconds, allowed, refused, other)
	}
	end := st.Start.Add(time.Duration(float64(len(st.Bins)) * st.BinSeconds * float64(time.Second)))
	if st.Start.After(at(-time.Hour)) || !end.After(at(48*time.Hour)) {
		t.Errorf("bins from %v to %v do not cover the records", st.Start, end)
	}
}

// TestWriteJSON: the JSON holds the same figures and reads back.
func TestWriteJSON(t *testing.T) {
	dir := t.TempDir()
	auditPath := writeAudit(t, dir, "audit.log", []audit.Record{refused("http://a.example/p?q=<b>&x", "", "Disallow: /p", 2, 0)})
	r, err := Build(Options{Audit: []string{auditPath}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"example": "http://a.example/p?q=<b>&x"`) {
		t.Errorf("URL escaped or missing:\n%s", buf.String())
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Origins[0].RefusedByRule[0].Count != 1 || back.Totals.Refused != 1 {
		t.Errorf("read back %+v", back.Origins[0])
	}
}

func short12(sha string) string { return sha[:12] }

// TestBuildUnreadable: an audit file that cannot be read fails the report,
// naming it; a line that is not a record is skipped, named, and reading
// goes on.
func TestBuildUnreadable(t *testing.T) {
	dir := t.TempDir()
	good := writeAudit(t, dir, "good.log", []audit.Record{allowed("http://a.example/1", "", 0, 0)})
	bad := filepath.Join(dir, "bad.log")
	if err := os.WriteFile(bad, []byte("{\"url\":\"http://a.example/\"}\nnot a record\n{\"url\":\"http://a.example/2\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := []string{good, filepath.Join(dir, "missing.log")}
	if _, err := Build(Options{Audit: missing}); err == nil || !strings.Contains(err.Error(), missing[1]) {
		t.Errorf("%q: error %v, want one naming %s", missing, err, missing[1])
	}
	for _, files := range [][]string{{bad}, {good, bad}} {
		r, err := Build(Options{Audit: files})
		if err != nil || r.Records != int64(len(files)+1) || r.Skipped != 1 || len(r.SkippedLines) != 1 ||
			r.SkippedLines[0] != bad+":2: skipped: not an audit record: invalid character 'o' in literal null (expecting 'u')" ||
			!strings.Contains(strings.Join(r.Notes, " "), "1 line of the audit logs is not an audit record and was skipped") {
			t.Errorf("%q: %v; %d records, skipped %d %q, notes %q", files, err, r.Records, r.Skipped, r.SkippedLines, r.Notes)
		}
	}
}

// CONNECTs are tunnels, counted by what became of them and not as
// requests: an intercepted tunnel's requests are records of their own.
func TestBuildCountsTunnelsApart(t *testing.T) {
	tunnel := func(decision, note string) audit.Record {
		r := allowed("https://a.example/", "", 0, 0) // as the proxy spells a CONNECT to a.example:443
		r.Method, r.Decision, r.Note, r.UpstreamStatus = "CONNECT", decision, note, 0
		return r
	}
	refusedTunnel := tunnel("disallow", "")
	refusedTunnel.Rule, refusedTunnel.Line, refusedTunnel.Status = "Disallow: /", 2, 403
	recs := []audit.Record{
		tunnel("allow", "tunnel intercepted: each request in it is judged"),
		tunnel("allow", "plain HTTP inside the tunnel: each request in it is judged as http://a.example:443"),
		tunnel("allow", "tunnel not intercepted (mitm.skip_hosts)"),
		refusedTunnel,
		tunnel("client-tls-failed", "the client's TLS handshake failed"),
		allowed("https://a.example/page", "", sec, 0),
	}
	r, err := Build(Options{Audit: []string{writeAudit(t, t.TempDir(), "audit.log", recs)}})
	if err != nil {
		t.Fatal(err)
	}
	// The tunnel that carried plain HTTP counts under the http:// origin
	// its requests were judged as, not under https://a.example.
	want := Counts{Requests: 1, Allowed: 1, Forwarded: 1, Tunnels: Tunnels{Intercepted: 2, Blind: 1, Refused: 1, Failed: 1}}
	wantHTTPS := Counts{Requests: 1, Allowed: 1, Forwarded: 1, Tunnels: Tunnels{Intercepted: 1, Blind: 1, Refused: 1, Failed: 1}}
	wantHTTP := Counts{Tunnels: Tunnels{Intercepted: 1}}
	if len(r.Origins) != 2 || r.Totals != want || r.Origins[0].Origin != "https://a.example" || r.Origins[0].Counts != wantHTTPS ||
		r.Origins[1].Origin != "http://a.example:443" || r.Origins[1].Counts != wantHTTP {
		t.Errorf("totals %+v, origins %+v; want %+v, https://a.example %+v and http://a.example:443 %+v", r.Totals, r.Origins, want, wantHTTPS, wantHTTP)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "5 tunnels (CONNECT), not counted as requests: 2 intercepted") {
		t.Errorf("the HTML does not count the tunnels apart:\n%s", buf.String())
	}
}

// Gaps are taken between the recorded send times when records give them
// (the origin's view, connecting included), else between arrival + hold,
// and the report says how many of each it used.
func TestGapsUseTheRecordedSendTime(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "archive")
	body := []byte("User-agent: *\nCrawl-delay: 1\nDisallow: /cgi-bin/\n")
	sha, o := archive.Sum(body), "http://slow.example"
	writeArchive(t, arch, []archive.Fetch{{Time: at(-time.Hour), Origin: o, HTTPStatus: 200, Outcome: "ok", SHA256: sha, Size: len(body)}},
		map[string][]byte{sha: body})
	// Held 0 and 1000 ms: arrival + hold is 1 s apart, but the first took
	// 10 ms to reach the origin, so the origin saw them 990 ms apart.
	first, second := allowed(o+"/a", sha, 0, 0), allowed(o+"/b", sha, 0, time.Second)
	first.SentMS, second.SentMS = 10, 1000
	for _, c := range []struct {
		name                 string
		sent                 bool
		below, rec, estimate int64
	}{
		{"recorded", true, 1, 2, 0},
		{"estimated (records without sent)", false, 0, 0, 2},
	} {
		recs := []audit.Record{first, second}
		if !c.sent {
			recs[0].SentMS, recs[1].SentMS = 0, 0
		}
		r, err := Build(Options{Audit: []string{writeAudit(t, dir, "audit.log", recs)}, Archive: arch})
		if err != nil {
			t.Fatal(err)
		}
		p := r.Pacing
		if p.Gaps != 1 || p.BelowAsked != c.below || p.SentRecorded != c.rec || p.SentEstimated != c.estimate {
			t.Errorf("%s: %d gaps, %d below, %d sent recorded, %d estimated; want 1, %d, %d, %d",
				c.name, p.Gaps, p.BelowAsked, p.SentRecorded, p.SentEstimated, c.below, c.rec, c.estimate)
		}
		if estimated := slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "no send time") }); estimated != !c.sent {
			t.Errorf("%s: notes %q; want a note on estimated send times: %t", c.name, r.Notes, !c.sent)
		}
	}
}

// AI-usage refusals are counted per origin by the signal that refused,
// with its purposes, where it was read, the tdmrep.json version, and
// whether the origin saw the request; an origin writing a header value of
// its own in every response grows the table to 50 rows at most.
func TestBuildCountsRefusalsBySignal(t *testing.T) {
	usage := func(url string, s audit.UsageSignal, monitor bool) audit.Record {
		r := allowed(url, "", 0, 0)
		// The robots.txt rule that allowed the path: no rule refusal.
		r.Decision, r.Status, r.Usage, r.Rule, r.Line = "usage-denied", 403, []audit.UsageSignal{s}, "Allow: /", 2
		if s.Signal == audit.SignalTDMRep {
			r.UpstreamStatus, r.TDMRepSHA256 = 0, "ab12"
		}
		if monitor {
			r.Mode, r.Enforced, r.Status = "monitor", false, 200
		}
		return r
	}
	tdm := audit.UsageSignal{Signal: audit.SignalTDMRep, Value: "1", Where: `tdmrep.json[0] (location "/*")`, Policy: "https://a.example/policy", Refuses: []string{"tdm"}}
	xrt := audit.UsageSignal{Signal: audit.SignalXRobotsTag, Value: "noai", Where: "response header", Refuses: []string{"train-ai"}}
	recs := []audit.Record{
		usage("http://a.example/1", tdm, false), usage("http://a.example/2", tdm, false),
		usage("http://a.example/3", xrt, false), usage("http://a.example/4", xrt, true),
	}
	for i := range 60 {
		recs = append(recs, usage("http://b.example/", audit.UsageSignal{Signal: audit.SignalXRobotsTag, Value: fmt.Sprintf("noai-%d", i), Where: "response header", Refuses: []string{"train-ai"}}, false))
	}
	r, err := Build(Options{Audit: []string{writeAudit(t, t.TempDir(), "audit.log", recs)}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Origin{}
	for _, o := range r.Origins {
		byName[o.Origin] = o
	}
	got := byName["http://a.example"].RefusedBySignal
	want := []SignalCount{
		{Signal: audit.SignalTDMRep, Value: "1", Where: tdm.Where, Policy: tdm.Policy, Refuses: []string{"tdm"}, TDMRepSHA256: "ab12", Count: 2, Example: "http://a.example/1"},
		{Signal: audit.SignalXRobotsTag, Value: "noai", Where: "response header", Refuses: []string{"train-ai"}, OriginAnswered: true, Count: 1, Monitored: 1, Example: "http://a.example/3"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a.example by signal:\n got %+v\nwant %+v", got, want)
	}
	if rules := byName["http://a.example"].RefusedByRule; len(rules) != 0 {
		t.Errorf("refused by robots.txt rule: %+v, want none (robots.txt allowed these)", rules)
	}
	// The tdmrep.json version is in the appendix, as robots.txt versions are.
	if len(r.Bodies) != 1 || r.Bodies[0].SHA256 != "ab12" || r.Bodies[0].Kind != "tdmrep.json" || fmt.Sprint(r.Bodies[0].Origins) != "[http://a.example]" {
		t.Errorf("bodies %+v, want the tdmrep.json ab12 of a.example", r.Bodies)
	}
	if b := byName["http://b.example"]; len(b.RefusedBySignal) != 50 || b.OtherSignals != 10 {
		t.Errorf("b.example: %d rows, %d other; want 50 rows and 10 other", len(b.RefusedBySignal), b.OtherSignals)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Refused by AI-usage signal", "yes: it answered, the response was withheld", "policy https://a.example/policy", "10 more refusals",
		`href="#` + bodyID("ab12") + `"`, `id="` + bodyID("ab12") + `"`, "tdmrep.json SHA-256"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("the HTML does not say %q", s)
		}
	}
}

// TestBuildSumsWhatWasPaidPerOrigin: crawler_charged is summed per origin
// and currency, exactly (0.1 + 0.2 is 0.30); a charge that does not parse
// is counted apart, and the HTML shows the sums.
func TestBuildSumsWhatWasPaidPerOrigin(t *testing.T) {
	paid := func(url, charged string, arrival time.Duration) audit.Record {
		r := allowed(url, "", arrival, 0)
		r.CrawlerPrice, r.CrawlerCharged = charged, charged
		return r
	}
	recs := []audit.Record{
		paid("https://a.example/1", "USD 0.1", 0),
		paid("https://a.example/2", "USD 0.2", sec),
		paid("https://a.example/3", "EUR 0.0025", 2*sec),
		paid("https://a.example/4", "lots of money", 3*sec),
		paid("https://b.example/1", "USD 1", 0),
		allowed("https://b.example/free", "", sec, 0),
	}
	r, err := Build(Options{Audit: []string{writeAudit(t, t.TempDir(), "audit.log", recs)}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Paid{
		"https://a.example": {{Amount: "EUR 0.0025", Requests: 1}, {Amount: "USD 0.30", Requests: 2}},
		"https://b.example": {{Amount: "USD 1.00", Requests: 1}},
	}
	for _, o := range r.Origins {
		if !slices.Equal(o.Paid, want[o.Origin]) {
			t.Errorf("%s paid %+v, want %+v", o.Origin, o.Paid, want[o.Origin])
		}
		if wantUnread := int64(map[string]int{"https://a.example": 1}[o.Origin]); o.UnreadCharges != wantUnread {
			t.Errorf("%s: %d unread charges, want %d", o.Origin, o.UnreadCharges, wantUnread)
		}
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "USD 0.30") || !strings.Contains(buf.String(), "1 more charge could not be read") {
		t.Errorf("the HTML does not show what was paid:\n%s", buf.String())
	}
}

// TestBuildFlagsChargesAboveTheQuote: records the proxy flagged
// (crawler_overcharged: a crawler-charged above the crawler-price quoted)
// are counted per origin, and the HTML says so.
func TestBuildFlagsChargesAboveTheQuote(t *testing.T) {
	paid := func(url, price, charged string, over bool, arrival time.Duration) audit.Record {
		r := allowed(url, "", arrival, 0)
		r.CrawlerPrice, r.CrawlerCharged, r.CrawlerOvercharged = price, charged, over
		return r
	}
	recs := []audit.Record{
		paid("https://a.example/1", "USD 0.01", "USD 0.01", false, 0),
		paid("https://a.example/2", "USD 0.01", "USD 0.05", true, sec),
		paid("https://b.example/1", "USD 0.01", "USD 0.01", false, 0),
	}
	r, err := Build(Options{Audit: []string{writeAudit(t, t.TempDir(), "audit.log", recs)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range r.Origins {
		if want := int64(map[string]int{"https://a.example": 1}[o.Origin]); o.Overcharged != want {
			t.Errorf("%s: %d overcharges, want %d", o.Origin, o.Overcharged, want)
		}
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "above the price the origin quoted"); got != 1 {
		t.Errorf("the HTML flags %d origins' charges as above the quote, want 1", got)
	}
}
