//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/report"
)

// The politeness governor through the real binary: an origin that answers
// 429 or 503 is paused, whatever the client does. The clients here send
// as fast as they can for a bounded time; the origins record when each
// request reached their handler.

// inFlight is how long after an origin sent its 429 a request may still
// reach it legitimately: one the proxy had sent before the 429 reached
// it (at most one per client connection). On loopback that takes a
// millisecond; 250 ms covers a loaded 2-core machine, while a proxy that
// does not pause keeps the origin busy for the whole pause.
const inFlight = 250 * time.Millisecond

// scriptedOrigin answers page requests with what answer says for the n-th
// one (1-based), serving robots.txt itself, and records every arrival.
type scriptedOrigin struct {
	*httptest.Server
	n      atomic.Int64
	mu     sync.Mutex
	hits   []hit
	answer func(n int64, w http.ResponseWriter) int // writes the header, returns the status
}

// hit is one page request as the origin saw it: when its handler began,
// and when it answered with a status that pauses (0: it did not).
type hit struct {
	n      int64
	at     time.Time
	status int
}

func startScriptedOrigin(t *testing.T, robotsTxt string, answer func(n int64, w http.ResponseWriter) int) *scriptedOrigin {
	t.Helper()
	o := &scriptedOrigin{answer: answer}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, robotsTxt)
			return
		}
		h := hit{n: o.n.Add(1), at: time.Now()}
		status := o.answer(h.n, w)
		if status != http.StatusOK {
			h.status = status
		}
		o.mu.Lock()
		o.hits = append(o.hits, h)
		o.mu.Unlock()
		if status == http.StatusOK {
			io.WriteString(w, "page")
		}
	}))
	t.Cleanup(o.Close)
	return o
}

// snapshot returns the arrivals so far, in order of arrival.
func (o *scriptedOrigin) snapshot() []hit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]hit(nil), o.hits...)
}

// firstWith returns the first arrival answered with status.
func firstWith(hits []hit, status int) (hit, bool) {
	for _, h := range hits {
		if h.status == status {
			return h, true
		}
	}
	return hit{}, false
}

// governorConfig writes a configuration with the audit log at
// dir/audit.log and extra keys under pacing:, and returns its path.
func governorConfig(t *testing.T, dir, pacing string) string {
	t.Helper()
	path := filepath.Join(dir, "governor.yaml")
	writeFile(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: ""
egress:
  allow_networks: [127.0.0.1/32]
mitm:
  ca_cert: %q
  ca_key: %q
log:
  audit: %q
pacing:
%s`, filepath.Join(dir, "certs", "ca.pem"), filepath.Join(dir, "certs", "ca-key.pem"), filepath.Join(dir, "audit.log"), pacing))
	return path
}

// hammer runs workers clients that send GETs through c to base/page-N as
// fast as they can until d has passed, and returns every response.
func hammer(c *http.Client, base string, workers int, d time.Duration) []response {
	var mu sync.Mutex
	var out []response
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	var seq atomic.Int64
	for range workers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				r, err := getAs(c, fmt.Sprintf("%s/page-%d", base, seq.Add(1)), "hammer/1.0")
				if err != nil {
					r = response{status: -1, body: err.Error()}
				}
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// auditRecords reads the audit log, waiting (bounded) until it holds at
// least n records: a record is written when its response is done.
func auditRecords(t *testing.T, path string, n int) []audit.Record {
	t.Helper()
	deadline := time.Now().Add(logTimeout)
	for {
		recs := readAudit(t, path)
		if len(recs) >= n || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(10 * time.Millisecond) // polling a file: nothing signals a write
	}
}

func readAudit(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []audit.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestE2EOriginAnswering429IsPausedForItsRetryAfter: an origin with a
// Crawl-delay of 0.25 s answers its 5th request 429 with Retry-After
// meaning 3 s, as delta-seconds and as an HTTP date; four clients
// hammering it through the proxy never reach it during those 3 s (they
// are held: within pacing.max_wait), then traffic resumes at the
// Crawl-delay, and the held responses say why they waited.
func TestE2EOriginAnswering429IsPausedForItsRetryAfter(t *testing.T) {
	const pause = 3 * time.Second
	const delay = 250 * time.Millisecond
	for _, tc := range []struct {
		name  string
		retry func(date time.Time) string
	}{
		{"delta-seconds", func(time.Time) string { return "3" }},
		{"HTTP-date", func(date time.Time) string { return date.Add(pause).Format(http.TimeFormat) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent atomic.Value // the Retry-After the origin sent
			o := startScriptedOrigin(t, "User-agent: *\nCrawl-delay: 0.25\n", func(n int64, w http.ResponseWriter) int {
				if n != 5 {
					return http.StatusOK
				}
				date := time.Now().UTC().Truncate(time.Second)
				w.Header().Set("Date", date.Format(http.TimeFormat))
				sent.Store(tc.retry(date))
				w.Header().Set("Retry-After", tc.retry(date))
				w.WriteHeader(http.StatusTooManyRequests)
				return http.StatusTooManyRequests
			})
			dir := t.TempDir()
			p := startServe(t, dir, "-config", governorConfig(t, dir, "  max_wait: 10s\n"))
			rs := hammer(proxyClient(t, p.addr, ""), o.URL, 4, 6*time.Second)
			hits := o.snapshot()
			h429, ok := firstWith(hits, http.StatusTooManyRequests)
			if !ok {
				t.Fatalf("the origin never answered 429: %d requests reached it", len(hits))
			}
			var after []time.Time
			for _, h := range hits {
				if since := h.at.Sub(h429.at); h.n != 5 && since > 0 {
					after = append(after, h.at)
					if since < pause-arrivalJitter {
						t.Errorf("request %d reached the origin %v after its 429 with Retry-After %v", h.n, since.Round(time.Millisecond), pause)
					}
				}
			}
			if len(after) < 3 {
				t.Fatalf("traffic did not resume after the pause: %d requests after the 429", len(after))
			}
			for i := 1; i < len(after); i++ {
				if gap := after[i].Sub(after[i-1]); gap < delay-arrivalJitter {
					t.Errorf("after the pause, requests reached the origin %v apart, under the Crawl-delay %v", gap, delay)
				}
			}
			held := 0
			for _, r := range rs {
				switch {
				case r.status == http.StatusOK && r.header.Get("X-Robotsgate-Backoff") != "":
					held++
					if b := r.header.Get("X-Robotsgate-Backoff"); !strings.Contains(b, "the origin answered 429 with Retry-After: "+sent.Load().(string)) {
						t.Errorf("X-Robotsgate-Backoff %q does not name the 429", b)
					}
				case r.status == http.StatusOK, r.status == http.StatusTooManyRequests && r.header.Get("X-Robotsgate-Decision") == "":
				default:
					t.Errorf("a client got %d %q (decision %q): held requests must be served", r.status, r.body, r.header.Get("X-Robotsgate-Decision"))
				}
			}
			if held == 0 {
				t.Error("no response says it was held for the pause (X-Robotsgate-Backoff)")
			}
			checkPauseRecorded(t, filepath.Join(dir, "audit.log"), len(rs), pause)
			b, page := reportBackoff(t, dir, o.URL, len(rs))
			if b.Answers != 1 || b.PausedSeconds < 2 || b.PausedSeconds > 3 || b.Held == 0 || b.SentDuringPause != 0 {
				t.Errorf("report: %+v, want one pause of about 3 s kept, requests held, none sent during it", b)
			}
			if !strings.Contains(page, "No request left robotsgate for this origin while it was paused.") {
				t.Error("the report page does not say that no request left during the pause")
			}
		})
	}
}

// reportBackoff runs robotsgate report on the audit log in dir, once it
// holds n records, and returns origin's backoff figures (the report's
// section "Asked to slow down") and the page's text.
func reportBackoff(t *testing.T, dir, origin string, n int) (report.BackoffFigures, string) {
	t.Helper()
	auditPath := filepath.Join(dir, "audit.log")
	auditRecords(t, auditPath, n)
	stdout, stderr, code := runBin(t, dir, "report", "-format", "json", "-audit", auditPath, "-archive", "")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report JSON: %v", err)
	}
	page := filepath.Join(dir, "report.html")
	if _, stderr, code := runBin(t, dir, "report", "-audit", auditPath, "-archive", "", "-o", page); code != 0 {
		t.Fatalf("report -o: exit %d: %s", code, stderr)
	}
	for _, o := range r.Origins {
		if o.Origin == origin {
			return o.Backoff, readText(t, page)
		}
	}
	t.Fatalf("the report has no origin %s", origin)
	return report.BackoffFigures{}, ""
}

// checkPauseRecorded reads the audit log: the 429's record carries the
// pause it started, of the expected length, and held requests say how long
// they waited for it.
func checkPauseRecorded(t *testing.T, path string, n int, pause time.Duration) {
	t.Helper()
	var paused, held int
	for _, rec := range auditRecords(t, path, n) {
		if rec.Pause != nil {
			paused++
			if d := rec.Pause.Until.Sub(rec.Pause.From); rec.UpstreamStatus != 429 || d < pause-time.Second || d > pause {
				t.Errorf("record of %s: upstream %d, pause %+v (%v), want the 429's pause of about %v", rec.URL, rec.UpstreamStatus, rec.Pause, d, pause)
			}
		}
		if rec.BackoffMS > 0 {
			held++
			if !strings.Contains(rec.Backoff, "answered 429") || rec.BackoffMS > rec.WaitMS {
				t.Errorf("record of %s: backoff %q, backoff_ms %v of wait_ms %v", rec.URL, rec.Backoff, rec.BackoffMS, rec.WaitMS)
			}
		}
	}
	if paused != 1 || held == 0 {
		t.Errorf("audit log: %d records with a pause (want 1), %d held for it (want some)", paused, held)
	}
}

// TestE2EOriginAnswering503PausesGrowAndReset: an origin that answers 503
// without Retry-After three times in a row is paused 0.5 s, 1 s, 2 s
// (pacing.backoff.initial 0.5s, factor 2, up to 10 % more for jitter);
// after a success the series starts again at 0.5 s. A client sending as
// fast as it can is held through each pause.
func TestE2EOriginAnswering503PausesGrowAndReset(t *testing.T) {
	unavailable := map[int64]bool{2: true, 3: true, 4: true, 6: true}
	o := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(n int64, w http.ResponseWriter) int {
		if unavailable[n] {
			w.WriteHeader(http.StatusServiceUnavailable)
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	dir := t.TempDir()
	p := startServe(t, dir, "-config", governorConfig(t, dir, "  backoff:\n    initial: 500ms\n    factor: 2\n"))
	c := proxyClient(t, p.addr, "")
	for i := 0; o.n.Load() < 7; i++ {
		if r, err := getAs(c, fmt.Sprintf("%s/page-%d", o.URL, i), "eager/1.0"); err != nil || (r.status != 200 && r.status != 503) {
			t.Fatalf("request %d: %d %v", i, r.status, err)
		}
	}
	hits := o.snapshot()
	if b, _ := reportBackoff(t, dir, o.URL, len(hits)); b.Answers != 4 || b.Statuses[503] != 4 || b.Held < 4 || b.SentDuringPause != 0 {
		t.Errorf("report: %+v, want four 503s, the requests after them held, none sent during a pause", b)
	}
	want := map[int64]time.Duration{3: 500 * time.Millisecond, 4: time.Second, 5: 2 * time.Second, 7: 500 * time.Millisecond}
	for i := 1; i < len(hits); i++ {
		pause, ok := want[hits[i].n]
		if !ok {
			continue
		}
		gap := hits[i].at.Sub(hits[i-1].at)
		if gap < pause-arrivalJitter || gap > pause+pause/10+inFlight {
			t.Errorf("request %d reached the origin %v after the 503 to request %d, want a pause of %v (+10 %% jitter)",
				hits[i].n, gap.Round(time.Millisecond), hits[i-1].n, pause)
		}
	}
}

// TestE2EClientIgnoring429NeverReachesThePausedOrigin: eight clients keep
// hammering an origin that answered 429 with Retry-After: 120, beyond
// pacing.max_wait: every request is refused by the proxy (429
// origin-backoff, Retry-After counting down from 120 s, the message naming
// the origin's answer), none reaches the origin but those already sent.
func TestE2EClientIgnoring429NeverReachesThePausedOrigin(t *testing.T) {
	const workers = 8
	o := startScriptedOrigin(t, "User-agent: *\nAllow: /\n", func(n int64, w http.ResponseWriter) int {
		if n < 20 {
			return http.StatusOK
		}
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		return http.StatusTooManyRequests
	})
	dir := t.TempDir()
	p := startServe(t, dir, "-config", governorConfig(t, dir, "  max_wait: 5s\n"))
	rs := hammer(proxyClient(t, p.addr, ""), o.URL, workers, 2*time.Second)
	hits := o.snapshot()
	h429, ok := firstWith(hits, http.StatusTooManyRequests)
	if !ok {
		t.Fatalf("the origin never answered 429 (%d requests)", len(hits))
	}
	late, tooLate := 0, 0
	for _, h := range hits {
		if since := h.at.Sub(h429.at); since > 0 {
			late++
			if since > inFlight {
				if tooLate == 0 {
					t.Errorf("request %d reached the paused origin %v after its 429", h.n, since.Round(time.Millisecond))
				}
				tooLate++
			}
		}
	}
	if late > workers-1 {
		t.Errorf("%d requests reached the origin after its 429; at most %d were in flight", late, workers-1)
	}
	refused := 0
	for _, r := range rs {
		if r.header.Get("X-Robotsgate-Decision") != "origin-backoff" {
			continue
		}
		refused++
		ra, err := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != 429 || err != nil || ra < 110 || ra > 120 || !strings.Contains(r.body, "the origin answered 429 with Retry-After: 120") {
			t.Errorf("refusal: %d, Retry-After %q, body %q", r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	if refused < 100 {
		t.Errorf("%d refusals in 2 s of hammering: the clients were not answered at once", refused)
	}
	if b, _ := reportBackoff(t, dir, o.URL, len(rs)); b.Answers < 1 || b.Refused != int64(refused) || b.SentDuringPause != 0 {
		t.Errorf("report: %+v, want the 429's pause, %d refusals, none sent during it", b, refused)
	}
}

// TestE2EVisitTimeRefusesOutsideItsWindow: robots.txt asks agent Early to
// visit two hours from now and agent Now within the present hour
// (Visit-time, UTC): Early gets 429 outside-visit-time with Retry-After
// to its window's start and never reaches the origin; Now is served.
func TestE2EVisitTimeRefusesOutsideItsWindow(t *testing.T) {
	now := time.Now().UTC()
	hhmm := func(t time.Time) string { return t.Format("1504") }
	start := now.Add(2 * time.Hour).Truncate(time.Minute)
	robotsTxt := fmt.Sprintf("User-agent: Early\nVisit-time: %s-%s\nAllow: /\n\nUser-agent: Now\nVisit-time: %s-%s\nAllow: /\n",
		hhmm(start), hhmm(start.Add(time.Hour)), hhmm(now.Add(-time.Hour)), hhmm(now.Add(time.Hour)))
	o := startScriptedOrigin(t, robotsTxt, func(int64, http.ResponseWriter) int { return http.StatusOK })
	dir := t.TempDir()
	p := startServe(t, dir, "-config", governorConfig(t, dir, "  max_wait: 10s\n"))
	c := proxyClient(t, p.addr, "")

	r, err := getAs(c, o.URL+"/outside", "Early/1.0")
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	wantMax := int(start.Sub(now)/time.Second) + 1
	if r.status != 429 || r.header.Get("X-Robotsgate-Decision") != "outside-visit-time" || ra < wantMax-60 || ra > wantMax ||
		!strings.Contains(r.body, hhmm(start)+"-"+hhmm(start.Add(time.Hour))+" (line 2)") {
		t.Errorf("outside the window: %d %q Retry-After %q (want about %d s) %q", r.status, r.header.Get("X-Robotsgate-Decision"), r.header.Get("Retry-After"), wantMax, r.body)
	}
	if r, err := getAs(c, o.URL+"/inside", "Now/1.0"); err != nil || r.status != 200 {
		t.Errorf("inside the window: %d %q %v", r.status, r.body, err)
	}
	for _, h := range o.snapshot() {
		if h.n != 1 {
			t.Errorf("the origin received %d page requests, want only the one inside its window", h.n)
		}
	}
}

// TestE2EAdaptivePacingSpacesASlowOrigin: an origin that takes 200 ms to
// answer, with pacing.adaptive.factor 5 and no Crawl-delay, is paced at
// 5 × 200 ms: four clients hammering it for 4 s reach it at least 1 s
// apart (less arrivalJitter). A request of another agent (its own group,
// so its own schedule) goes first, alone, so that the origin's response
// time is known: until then the interval is pacing.adaptive.min, 0 here.
func TestE2EAdaptivePacingSpacesASlowOrigin(t *testing.T) {
	const work = 200 * time.Millisecond
	o := startScriptedOrigin(t, "User-agent: warmup\nAllow: /\n\nUser-agent: *\nAllow: /\n", func(int64, http.ResponseWriter) int {
		time.Sleep(work) // the origin's own slowness: what adaptive pacing measures
		return http.StatusOK
	})
	dir := t.TempDir()
	p := startServe(t, dir, "-config", governorConfig(t, dir, "  max_wait: 30s\n  adaptive:\n    factor: 5\n"))
	c := proxyClient(t, p.addr, "")
	if r, err := getAs(c, o.URL+"/first", "warmup"); err != nil || r.status != 200 {
		t.Fatalf("first request: %d %v", r.status, err)
	}
	rs := hammer(c, o.URL, 4, 4*time.Second)
	hits := o.snapshot()[1:]
	if len(hits) < 4 {
		t.Fatalf("only %d requests reached the origin in 4 s", len(hits))
	}
	for i := 1; i < len(hits); i++ {
		if gap := hits[i].at.Sub(hits[i-1].at); gap < 5*work-arrivalJitter {
			t.Errorf("requests %d and %d reached the origin %v apart, want at least 5 × %v", hits[i-1].n, hits[i].n, gap.Round(time.Millisecond), work)
		}
	}
	for _, r := range rs {
		if r.status != 200 {
			t.Errorf("a client got %d %q: within max_wait requests are held, not refused", r.status, r.body)
		}
	}
}

// TestE2ERefreshRefetchesRobotsTxtAndEndsThePause: a site changes its
// robots.txt (the old copy is fresh for a day) and its origin, paused by a
// 429 with Retry-After: 300, is fixed; robotsgate refresh, through the
// admin listener, fetches the file again and ends the pause: the path the
// old file disallowed is served, no request waits, and the refresh is in
// the audit log. A POST another site's page makes is refused.
func TestE2ERefreshRefetchesRobotsTxtAndEndsThePause(t *testing.T) {
	var robotsTxt atomic.Value
	robotsTxt.Store("User-agent: *\nDisallow: /private\n")
	var busy atomic.Bool
	busy.Store(true)
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			w.Header().Set("Cache-Control", "max-age=86400")
			io.WriteString(w, robotsTxt.Load().(string))
		case busy.Load():
			w.Header().Set("Retry-After", "300")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			io.WriteString(w, "page")
		}
	}))
	t.Cleanup(o.Close)
	dir := t.TempDir()
	p := startServe(t, dir, "-config", governorConfig(t, dir, "  max_wait: 5s\n"), "-admin-listen", "127.0.0.1:0")
	c := proxyClient(t, p.addr, "")
	if r := get(t, c, o.URL+"/private/a"); r.status != 403 {
		t.Fatalf("before: /private/a %d, want 403", r.status)
	}
	if r := get(t, c, o.URL+"/busy"); r.status != 429 || r.header.Get("X-Robotsgate-Decision") != "" {
		t.Fatalf("before: the origin's 429 %d %q", r.status, r.header.Get("X-Robotsgate-Decision"))
	}
	robotsTxt.Store("User-agent: *\nAllow: /\n")
	busy.Store(false)
	if r := get(t, c, o.URL+"/private/b"); r.status != 403 {
		t.Fatalf("with the old copy cached: /private/b %d, want 403", r.status)
	}
	admin := adminOf(t, p)
	req, _ := http.NewRequest(http.MethodPost, admin+"/refresh", strings.NewReader("origin="+o.URL))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("a cross-site POST /refresh: %v %v, want 403", resp, err)
	}
	stdout, stderr, code := runBin(t, dir, "refresh", "-admin", admin, o.URL+"/any/page")
	if code != 0 || !strings.Contains(stdout, "REFRESHED "+o.URL) || !strings.Contains(stdout, "robots.txt "+o.URL+"/robots.txt: ok (HTTP 200)") ||
		!strings.Contains(stdout, "pause ended: the origin answered 429 with Retry-After: 300") {
		t.Fatalf("refresh: exit %d\n%s%s", code, stdout, stderr)
	}
	if r := get(t, c, o.URL+"/private/c"); r.status != 200 || r.header.Get("X-Robotsgate-Wait") != "" {
		t.Errorf("after the refresh: /private/c %d, X-Robotsgate-Wait %q; want 200 at once", r.status, r.header.Get("X-Robotsgate-Wait"))
	}
	refreshed := false
	for _, rec := range auditRecords(t, filepath.Join(dir, "audit.log"), 5) {
		refreshed = refreshed || rec.Via == "admin" && strings.Contains(rec.Note, "refreshed by an operator") && strings.Contains(rec.Note, "pause ended early")
	}
	if !refreshed {
		t.Error("the audit log does not record the refresh")
	}
	if stdout, stderr, code := runBin(t, dir, "verify", "-audit", filepath.Join(dir, "audit.log"), "-archive", filepath.Join(dir, "robotsgate-state", "archive")); code != 0 {
		t.Errorf("verify of an audit log with a refresh: exit %d\n%s%s", code, stdout, stderr)
	}
}
