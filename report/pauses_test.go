package report

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// pausing is the record of a request whose answer paused its origin from
// from for pause.
func pausing(url string, arrival time.Duration, status int, retry string, from, pause time.Duration) audit.Record {
	r := allowed(url, "", arrival, 0)
	r.UpstreamStatus, r.Status, r.SentMS = status, status, 1
	r.Pause = &audit.Pause{From: at(from), Until: at(from + pause), Status: status, RetryAfter: retry}
	return r
}

// sentAt is an allowed request that arrived at arrival and left sent
// later.
func sentAt(url string, arrival, sent time.Duration) audit.Record {
	r := allowed(url, "", arrival, 0)
	r.SentMS = float64(sent.Microseconds()) / 1000
	return r
}

// The report's pause figures, worked out by hand: a request that left
// before the answer came is not counted though it is logged after the
// pause; one held to the pause's end is; one that left inside a pause is
// counted, whether its record comes before the pause's record or after;
// overlapping pauses are counted once in the paused time.
func TestBackoffFiguresCountRequestsSentDuringAPause(t *testing.T) {
	ms := time.Millisecond
	held := sentAt("http://a.example/held", 1500*ms, 2510*ms+100*time.Microsecond)
	held.BackoffMS, held.WaitMS, held.DurationMS, held.Backoff = 2510, 2510, 2530, "the origin answered 429 with Retry-After: 3"
	refusedRec := allowed("http://a.example/refused", "", 2500*ms, 0)
	refusedRec.Decision, refusedRec.UpstreamStatus, refusedRec.Status = audit.OriginBackoff, 0, 429
	monitor := sentAt("http://a.example/monitor", 2*sec, 0)
	monitor.Mode = "monitor"
	recs := []audit.Record{
		sentAt("http://a.example/before", 0, 0),
		pausing("http://a.example/429", sec, 429, "3", 1010*ms, 3*sec),
		sentAt("http://a.example/in-flight", 950*ms, 50*ms), // left at 1.000 s, before the 429 came at 1.010 s
		held, // left at 4.0101 s, the pause over at 4.010 s
		sentAt("http://a.example/during", 2*sec, 500*time.Microsecond),
		monitor, // not paced: a monitor client is never held
		refusedRec,
		sentAt("http://a.example/logged-early", 5*sec, sec), // left at 6 s, in the pause logged next
		pausing("http://a.example/503", 5500*ms, 503, "", 5510*ms, 2*sec),
		// Sent before the 503 came (in flight), answered 503 too: its
		// pause overlaps, the union ends at 8.01 s.
		pausing("http://a.example/503-again", 5400*ms, 503, "", 5600*ms, 2410*ms),
	}
	dir := t.TempDir()
	r, err := Build(Options{Audit: []string{writeAudit(t, dir, "audit.log", recs)}, Now: at(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Origins[0].Backoff
	want := BackoffFigures{
		Answers: 3, Statuses: map[int]int64{429: 1, 503: 2}, PausedSeconds: 5.5, LongestPauseSeconds: 3,
		Held: 1, HeldSeconds: 2.51, Refused: 1, SentDuringPause: 2, FirstDuringPause: "http://a.example/during",
	}
	if !maps.Equal(got.Statuses, want.Statuses) {
		t.Errorf("statuses %v, want %v", got.Statuses, want.Statuses)
	}
	got.Statuses, want.Statuses = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("backoff figures\n%+v, want\n%+v", got, want)
	}
	if r.Pacing.PauseAnswers != 3 || r.Pacing.SentDuringPause != 2 {
		t.Errorf("summary: %d answers, %d sent during a pause; want 3 and 2", r.Pacing.PauseAnswers, r.Pacing.SentDuringPause)
	}
}
