package admin

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

func TestMinuteRing(t *testing.T) {
	var r minuteRing
	const m = 29_000_000 // a Unix minute in 2025
	for range 3 {
		r.add(m)
	}
	r.add(m + 4)
	r.add(m + 4)
	got := r.series(m + 4)
	want := [SparkMinutes]int64{10: 3, 14: 2}
	if got != want {
		t.Errorf("series %v, want %v", got, want)
	}
	if got := r.series(m + 20); got != ([SparkMinutes]int64{}) {
		t.Errorf("20 minutes on: %v, want nothing", got)
	}
	r.add(m + SparkMinutes) // the slot of minute m, a round later
	if got := r.series(m + SparkMinutes); got != ([SparkMinutes]int64{3: 2, 14: 1}) {
		t.Errorf("a round later: %v", got)
	}

	// No lock: many goroutines count at once (go test -race), and a
	// minute that turns while they do loses nothing.
	var wg sync.WaitGroup
	var r2 minuteRing
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				r2.add(m + int64((g+i)%2))
			}
		})
	}
	wg.Wait()
	if s := r2.series(m + 1); s[13]+s[14] != 8000 || s[13] != 4000 {
		t.Errorf("concurrent counts %v, want 4000 and 4000", s[13:])
	}
}

// Counting sorts records: refusals by robots.txt or policy, upstream
// failures (an upstream-error, or an allowed request the proxy answered
// 502/504 without an answer from the origin), and neither (allowed; what
// the client did to itself); every decision value is counted.
func TestStatsSortsRecords(t *testing.T) {
	s := NewStats()
	now := time.Now()
	for _, r := range []audit.Record{
		{URL: "http://a.test/x", Decision: "allow", Enforced: true, Status: 200, UpstreamStatus: 200},
		{URL: "http://a.test/private", Decision: "disallow", Enforced: true, Status: 403},
		{URL: "http://a.test/monitored", Decision: "disallow", Enforced: false, Status: 200, UpstreamStatus: 200},
		{URL: "http://a.test/y", Decision: "allow", Enforced: true, Status: 502},                                // the origin went down
		{URL: "http://a.test/bad-gateway", Decision: "allow", Enforced: true, Status: 502, UpstreamStatus: 502}, // the origin's own 502
		{URL: "http://nowhere.test/", Decision: "upstream-error", Enforced: true, Status: 502},
		{URL: "//nowhere.test:443", Method: "CONNECT", Decision: "upstream-error", Enforced: true, Status: 502},
		{URL: "http://a.test/held", Decision: "client-closed", Enforced: true, Status: 499},
		{URL: "https://b.test/", Method: "CONNECT", Decision: "client-tls-failed", Enforced: true},
		{URL: "http://a.test/z", Decision: "from-the-future", Enforced: true, Status: 400},
	} {
		r.Time = now
		s.Add(&r)
	}
	v := viewOf(s, 10, now)
	byOrigin := map[string]Origin{}
	for _, o := range v.Busiest {
		byOrigin[o.Origin] = o
	}
	for origin, want := range map[string][3]int64{ // requests, refused, failed
		"http://a.test":              {7, 2, 1},
		"http://nowhere.test":        {1, 0, 1},
		"nowhere.test:443 (CONNECT)": {1, 0, 1},
		"b.test:443 (CONNECT)":       {1, 0, 0},
	} {
		o := byOrigin[origin]
		if got := [3]int64{o.Requests, o.Refused, o.Failed}; got != want {
			t.Errorf("%s: requests, refused, failed %v, want %v", origin, got, want)
		}
	}
	var recent, failures []string
	for _, r := range v.Recent {
		recent = append(recent, r.URL)
	}
	for _, r := range v.RecentFailures {
		failures = append(failures, r.URL)
	}
	// The monitored would-be refusal is listed too (the page marks it).
	if want := []string{"http://a.test/z", "http://a.test/monitored", "http://a.test/private"}; !slices.Equal(recent, want) {
		t.Errorf("recent refusals %q, want %q", recent, want)
	}
	if want := []string{"//nowhere.test:443", "http://nowhere.test/", "http://a.test/y"}; !slices.Equal(failures, want) {
		t.Errorf("recent failures %q, want %q", failures, want)
	}
	counts := map[string]int64{}
	for _, d := range v.Decisions {
		name := d.Name
		if d.Monitored {
			name += " (monitored)"
		}
		counts[name] = d.Count
	}
	// A monitored would-be refusal is its own kind, not a disallow.
	for name, want := range map[string]int64{"allow": 3, "disallow": 1, "disallow (monitored)": 1, "upstream-error": 2, "client-closed": 1,
		"client-tls-failed": 1, "(other)": 1, "unreachable": 0} {
		if counts[name] != want {
			t.Errorf("%s counted %d times, want %d", name, counts[name], want)
		}
	}

	if v.Reload != nil {
		t.Errorf("a reload before any: %+v", v.Reload)
	}
	s.Reloaded(errors.New("bad"), now)
	if r := viewOf(s, 1, now).Reload; r == nil || r.Err != "bad" || !r.At.Equal(now) {
		t.Errorf("reload %+v", r)
	}
}

// The refusal and failure lists keep the latest 50 records each, newest
// first (docs/operations.md, Memory).
func TestStatsKeepsTheLatest50Refusals(t *testing.T) {
	const kept = 50
	s := NewStats()
	now := time.Now()
	for i := range kept + 7 {
		s.Add(&audit.Record{URL: fmt.Sprintf("http://a.test/%d", i), Decision: "disallow", Enforced: true, Time: now})
		s.Add(&audit.Record{URL: fmt.Sprintf("http://b.test/%d", i), Decision: "upstream-error", Enforced: true, Status: 502, Time: now})
	}
	v := viewOf(s, 10, now)
	for _, l := range []struct {
		name, host string
		recs       []audit.Record
	}{{"refusals", "a.test", v.Recent}, {"upstream failures", "b.test", v.RecentFailures}} {
		if len(l.recs) != kept || l.recs[0].URL != fmt.Sprintf("http://%s/%d", l.host, kept+6) || l.recs[kept-1].URL != "http://"+l.host+"/7" {
			t.Errorf("%s: %d kept, newest %q, oldest %q", l.name, len(l.recs), l.recs[0].URL, l.recs[len(l.recs)-1].URL)
		}
	}
}

// The per-origin counters are bounded: past 20,000 origins the 10,000 seen
// last are kept (docs/operations.md, Memory), the origin that filled the
// table among them.
func TestStatsKeepTheOriginsSeenLast(t *testing.T) {
	const most, kept = 20000, 10000
	s := NewStats()
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	add := func(i int) {
		s.Add(&audit.Record{URL: fmt.Sprintf("http://o%d.test/", i), Decision: "allow", Enforced: true, Status: 200,
			UpstreamStatus: 200, Time: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	for i := range most {
		add(i)
	}
	if n := len(viewOf(s, most+1, t0).Busiest); n != most {
		t.Fatalf("%d origins counted of %d", n, most)
	}
	add(most)
	v := viewOf(s, most+1, t0)
	if len(v.Busiest) != kept {
		t.Fatalf("%d origins kept past %d, want %d", len(v.Busiest), most, kept)
	}
	seen := map[string]bool{}
	for _, o := range v.Busiest {
		seen[o.Origin] = true
	}
	for _, i := range []int{most, most - 1, most - kept + 1} {
		if o := fmt.Sprintf("http://o%d.test", i); !seen[o] {
			t.Errorf("%s, among the %d seen last, was forgotten", o, kept)
		}
	}
	if o := fmt.Sprintf("http://o%d.test", most-kept); seen[o] {
		t.Errorf("%s, seen before the last %d, was kept", o, kept)
	}
}

// A record is added when its response has been sent, which can be after a
// later request's (regression: the recent upstream failures were listed out
// of order now and then). The lists are by arrival, newest first.
func TestStatsListsRecordsByArrival(t *testing.T) {
	s := NewStats()
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for _, i := range []int{0, 2, 1, 3} {
		s.Add(&audit.Record{URL: fmt.Sprintf("http://a.test/%d", i), Decision: "disallow", Enforced: true, Time: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	recent := viewOf(s, 10, time.Now()).Recent
	var got []string
	for _, r := range recent {
		got = append(got, r.URL)
	}
	if want := []string{"http://a.test/3", "http://a.test/2", "http://a.test/1", "http://a.test/0"}; !slices.Equal(got, want) {
		t.Errorf("recent refusals %q, want %q (newest arrival first)", got, want)
	}
}

// Counting from many connections at once takes no lock on the path of an
// allowed request, and loses nothing (go test -race).
func TestStatsCountsConcurrently(t *testing.T) {
	s := NewStats()
	var wg sync.WaitGroup
	now := time.Now()
	for range 8 {
		wg.Go(func() {
			for range 500 {
				s.Add(&audit.Record{URL: "http://a.test/", Decision: "allow", Enforced: true, Status: 200, UpstreamStatus: 200, Time: now})
			}
		})
	}
	wg.Wait()
	v := viewOf(s, 1, now)
	if o := v.Busiest[0]; o.Requests != 4000 || o.Spark.Requests[SparkMinutes-1] != 4000 {
		t.Errorf("requests %d, this minute %d; want 4000", o.Requests, o.Spark.Requests[SparkMinutes-1])
	}
}

// viewOf returns the status page's statistics of s.
func viewOf(s *Stats, n int, now time.Time) Status {
	var v Status
	s.View(n, now, &v)
	return v
}
