package pacing

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/internal/testclock"
)

// testBackoff is pacing.backoff's defaults, written out: 429 and 503 at
// once, 500, 502, 504 and timeouts three in a row, 5 s doubling up to an
// hour, a Retry-After obeyed up to a day.
func testBackoff() BackoffParams {
	return BackoffParams{Enabled: true, Statuses: []int{429, 503}, FailureStatuses: []int{500, 502, 504}, FailureTimeouts: true,
		FailuresInARow: 3, Initial: 5 * time.Second, Factor: 2, Max: time.Hour, RetryAfterMax: 24 * time.Hour}
}

var t0 = time.Date(2026, 3, 14, 10, 42, 7, 0, time.UTC)

// newTestGovernor is a governor on a settable clock whose jitter is
// always jitter (0 to 1, scaled to MaxJitter).
func newTestGovernor(backoff BackoffParams, adaptive AdaptiveParams, jitter float64) (*Governor, *testclock.Clock) {
	clock := testclock.New(t0)
	g := NewGovernor(backoff, adaptive, GovernorOptions{Now: clock.Now, Jitter: func() float64 { return jitter }})
	return g, clock
}

// The pauses of answers without Retry-After follow the documented series,
// 5 s, 10 s, 20 s... capped at the maximum, lengthened by the jitter and
// never shortened by it; a Retry-After (seconds or an HTTP date, read
// against the answer's Date) replaces the series and is capped too.
// Expectations are worked out by hand from the rules.
func TestPausesFollowRetryAfterOrTheSeries(t *testing.T) {
	type answer struct {
		after       time.Duration // since the previous answer
		status      int
		retry, date string
	}
	tests := []struct {
		name    string
		params  BackoffParams
		jitter  float64
		answers []answer
		want    []time.Duration // the pause after each answer, from its time
	}{
		{"series doubles from 5s", testBackoff(), 0,
			[]answer{{0, 503, "", ""}, {time.Second, 503, "", ""}, {time.Second, 503, "", ""}},
			[]time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second}},
		{"jitter lengthens by up to 10 %", testBackoff(), 1,
			[]answer{{0, 503, "", ""}, {time.Second, 429, "", ""}},
			[]time.Duration{5500 * time.Millisecond, 11 * time.Second}},
		{"capped at max", BackoffParams{Enabled: true, Statuses: []int{503}, Initial: 20 * time.Second, Factor: 3, Max: 50 * time.Second}, 1,
			[]answer{{0, 503, "", ""}, {time.Second, 503, "", ""}},
			[]time.Duration{22 * time.Second, 50 * time.Second}},
		{"delta-seconds", testBackoff(), 1,
			[]answer{{0, 429, "3", ""}},
			[]time.Duration{3 * time.Second}},
		{"HTTP-date read against Date", testBackoff(), 0,
			[]answer{{0, 503, "Sat, 14 Mar 2026 10:44:07 GMT", "Sat, 14 Mar 2026 10:43:07 GMT"}},
			[]time.Duration{time.Minute}},
		{"HTTP-date without Date: our clock", testBackoff(), 0,
			[]answer{{0, 503, "Sat, 14 Mar 2026 10:44:07 GMT", ""}},
			[]time.Duration{2 * time.Minute}},
		// An origin's own Retry-After is not cut to max (1h), which bounds
		// the computed pauses: it is obeyed up to retry_after_max (24h).
		{"Retry-After beyond max obeyed in full", testBackoff(), 0,
			[]answer{{0, 429, "7200", ""}},
			[]time.Duration{2 * time.Hour}},
		{"Retry-After of a day obeyed in full", testBackoff(), 0,
			[]answer{{0, 503, "86400", ""}},
			[]time.Duration{24 * time.Hour}},
		{"Retry-After capped at retry_after_max", testBackoff(), 0,
			[]answer{{0, 429, "172800", ""}},
			[]time.Duration{24 * time.Hour}},
		{"unreadable or zero Retry-After: the series", testBackoff(), 0,
			[]answer{{0, 429, "soon", ""}, {time.Second, 429, "0", ""}},
			[]time.Duration{5 * time.Second, 10 * time.Second}},
		{"a quiet max restarts the series", testBackoff(), 0,
			[]answer{{0, 503, "", ""}, {time.Second, 503, "", ""}, {time.Hour, 503, "", ""}},
			[]time.Duration{5 * time.Second, 10 * time.Second, 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, clock := newTestGovernor(tt.params, AdaptiveParams{}, tt.jitter)
			for i, a := range tt.answers {
				clock.Advance(a.after)
				p, ok := g.Observe(context.Background(), "https://a.example", Answer{Status: a.status, RetryAfter: a.retry, Date: a.date})
				if !ok {
					t.Fatalf("answer %d (%d) paused nothing", i, a.status)
				}
				if got := p.Until.Sub(clock.Now()); got != tt.want[i] {
					t.Errorf("answer %d: pause %v, want %v (%s)", i, got, tt.want[i], p.Cause())
				}
			}
		})
	}
}

// Which answers pause: the configured statuses, connection errors only
// when asked, nothing when disabled; a success ends the series (the next
// pause is the first term again) but not a pause under way, and a later
// answer never shortens a pause.
func TestWhichAnswersPauseAndWhatEndsASeries(t *testing.T) {
	origin := "https://a.example"
	g, clock := newTestGovernor(testBackoff(), AdaptiveParams{}, 0)
	for _, a := range []Answer{{Status: 200}, {Status: 404}, {Status: 500}, {ConnectionError: true}} {
		if _, ok := g.Observe(context.Background(), origin, a); ok {
			t.Errorf("%+v paused the origin; only 429 and 503 should", a)
		}
	}
	g.Observe(context.Background(), origin, Answer{Status: 503})
	g.Observe(context.Background(), origin, Answer{Status: 429, RetryAfter: "1"})
	if p, ok := g.Paused(origin); !ok || p.Until.Sub(clock.Now()) != 5*time.Second || p.Streak != 2 {
		t.Errorf("a shorter Retry-After shortened the pause: %+v %v", p, ok)
	}
	g.Observe(context.Background(), origin, Answer{Status: 200})
	if _, ok := g.Paused(origin); !ok {
		t.Error("a success ended a pause under way")
	}
	clock.Advance(11 * time.Second)
	if p, _ := g.Observe(context.Background(), origin, Answer{Status: 503}); p.Streak != 1 || p.Until.Sub(clock.Now()) != 5*time.Second {
		t.Errorf("after a success: streak %d, pause %v; want the first term, 5s", p.Streak, p.Until.Sub(clock.Now()))
	}

	conn := testBackoff()
	conn.ConnectionErrors = true
	g, _ = newTestGovernor(conn, AdaptiveParams{}, 0)
	if p, ok := g.Observe(context.Background(), origin, Answer{ConnectionError: true}); !ok || p.Label() != "connection" {
		t.Errorf("connection_errors: %+v %v", p, ok)
	}
	off := testBackoff()
	off.Enabled = false
	g, _ = newTestGovernor(off, AdaptiveParams{}, 0)
	if _, ok := g.Observe(context.Background(), origin, Answer{Status: 429}); ok {
		t.Error("a disabled governor paused an origin")
	}
}

// The cause names the answer as the refusal and the audit say it.
func TestPauseCauseNamesTheAnswer(t *testing.T) {
	tests := []struct {
		p    Pause
		want string
	}{
		{Pause{Status: 503, RetryAfter: "120", At: t0, Streak: 1}, "the origin answered 503 with Retry-After: 120 at 10:42:07Z"},
		{Pause{Status: 429, At: t0, Streak: 3}, "the origin answered 429 (3 times in a row) at 10:42:07Z"},
		{Pause{At: t0, Streak: 1}, "the origin could not be reached at 10:42:07Z"},
		{Pause{Status: 503, RetryAfter: "1\r\nX: y", At: t0, Streak: 1}, "the origin answered 503 with Retry-After: 1??X: y at 10:42:07Z"},
	}
	for _, tt := range tests {
		if got := tt.p.Cause(); got != tt.want {
			t.Errorf("Cause() = %q, want %q", got, tt.want)
		}
	}
}

// Adaptive pacing takes the median of the last five response times, so
// that one slow answer does not count, times the factor, within min and
// max; off, it asks nothing.
func TestAdaptiveIntervalIsFactorTimesTheMedian(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name    string
		params  AdaptiveParams
		samples []time.Duration
		want    time.Duration
	}{
		{"off", AdaptiveParams{}, []time.Duration{ms(200)}, 0},
		{"nothing known: min", AdaptiveParams{Factor: 5, Min: ms(300), Max: 30 * time.Second}, nil, ms(300)},
		{"steady 200 ms, factor 5", AdaptiveParams{Factor: 5, Max: 30 * time.Second}, []time.Duration{ms(200), ms(200), ms(200)}, time.Second},
		{"one outlier does not count", AdaptiveParams{Factor: 5, Max: 30 * time.Second},
			[]time.Duration{ms(200), ms(10000), ms(200), ms(210), ms(190)}, ms(1000)},
		{"only the last five", AdaptiveParams{Factor: 2, Max: 30 * time.Second},
			[]time.Duration{ms(9000), ms(9000), ms(9000), ms(100), ms(100), ms(100), ms(100), ms(100)}, ms(200)},
		{"even count: the upper median", AdaptiveParams{Factor: 1, Max: 30 * time.Second}, []time.Duration{ms(100), ms(300)}, ms(300)},
		{"capped at max", AdaptiveParams{Factor: 5, Max: ms(1500)}, []time.Duration{ms(2000)}, ms(1500)},
		{"at least min", AdaptiveParams{Factor: 5, Min: 2 * time.Second, Max: 30 * time.Second}, []time.Duration{ms(10)}, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := newTestGovernor(testBackoff(), tt.params, 0)
			for _, d := range tt.samples {
				g.Observe(context.Background(), "https://a.example", Answer{Status: 200, Latency: d})
			}
			if got := g.AdaptiveInterval("https://a.example"); got != tt.want {
				t.Errorf("AdaptiveInterval = %v, want %v", got, tt.want)
			}
		})
	}
}

// A request to a paused origin is held until the pause ends (a pause that
// ends within max_wait), or refused at once with a *PausedError whose
// Retry-After is the time left; another origin is not held. Timings on
// the real clock, 50 ms of slack on a loaded machine.
func TestPacerHoldsARequestUntilItsOriginsPauseEnds(t *testing.T) {
	g := NewGovernor(testBackoff(), AdaptiveParams{}, GovernorOptions{})
	g.Observe(context.Background(), "https://a.example", Answer{Status: 429, RetryAfter: "1"})
	pausedAt := time.Now()
	tests := []struct {
		name      string
		maxWait   time.Duration
		origin    string
		wantHeld  time.Duration
		wantError bool
	}{
		// In this order: the last one waits the pause out.
		{"refused beyond max_wait", 500 * time.Millisecond, "https://a.example", 0, true},
		{"another origin is not held", 5 * time.Second, "https://b.example", 0, false},
		{"held within max_wait", 5 * time.Second, "https://a.example", time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(Options{MaxWait: tt.maxWait, Governor: g})
			start := time.Now()
			permit, err := p.Acquire(context.Background(), Request{Key: tt.origin + " *", PauseKey: tt.origin})
			took := time.Since(start)
			var paused *PausedError
			switch {
			case tt.wantError:
				if !errors.As(err, &paused) || !errors.Is(err, ErrPaused) || paused.RetryAfter <= tt.maxWait || paused.RetryAfter > time.Second {
					t.Fatalf("err %v (RetryAfter %v), want a *PausedError with the time left", err, paused)
				}
				if took > gapSlack {
					t.Errorf("the refusal took %v, want at once", took)
				}
			case err != nil:
				t.Fatal(err)
			default:
				defer permit.Release()
				if tt.wantHeld == 0 && (permit.Paused != 0 || took > gapSlack) {
					t.Errorf("held %v (Permit.Paused %v), want not held", took, permit.Paused)
				}
				if tt.wantHeld > 0 && time.Since(pausedAt) < tt.wantHeld-gapSlack {
					t.Errorf("let through %v after the 429 paused the origin for %v", time.Since(pausedAt), tt.wantHeld)
				}
				if tt.wantHeld > 0 && permit.Pause.Status != 429 {
					t.Errorf("Permit.Pause %+v, want the 429's", permit.Pause)
				}
			}
		})
	}
}

// A pause that begins while a request waits for its Crawl-delay slot
// holds it too: it does not go at its slot while the origin is paused.
func TestPauseBegunDuringTheSlotWaitHoldsTheRequest(t *testing.T) {
	g := NewGovernor(testBackoff(), AdaptiveParams{}, GovernorOptions{})
	store := &notifyStore{Store: NewMemory(MemoryOptions{}), reserved: make(chan Reservation, 2)}
	p := New(Options{MaxWait: 5 * time.Second, Governor: g, Store: store})
	req := Request{Key: "https://a.example *", Interval: 300 * time.Millisecond, PauseKey: "https://a.example"}
	first, err := p.Acquire(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	<-store.reserved
	first.Sent()
	done := make(chan time.Time, 1)
	go func() {
		permit, err := p.Acquire(context.Background(), req)
		if err != nil {
			t.Error(err)
		}
		done <- time.Now()
		permit.Release()
	}()
	if r := <-store.reserved; r.Wait < 200*time.Millisecond { // its slot is taken: it now sleeps for it
		t.Fatalf("the second request's slot is %v away, want about 300ms", r.Wait)
	}
	g.Observe(context.Background(), "https://a.example", Answer{Status: 503, RetryAfter: "1"})
	paused := time.Now()
	if at := <-done; at.Sub(paused) < time.Second-gapSlack {
		t.Errorf("the second request went %v after the 503 paused the origin for 1s", at.Sub(paused))
	}
}

// The pauses table stays within its bound: past 100,000 origins, those
// whose pauses end first are forgotten, down to 90,000, and the origin
// just paused is kept.
func TestPausesTableIsBounded(t *testing.T) {
	g, clock := newTestGovernor(testBackoff(), AdaptiveParams{}, 0)
	for i := range 100_001 {
		clock.Advance(time.Millisecond) // each pause ends after the one before
		g.Observe(context.Background(), fmt.Sprintf("https://%d.example", i), Answer{Status: 503})
	}
	if n := g.active.Load(); n != 90_000 {
		t.Errorf("%d origins kept after 100,001 paused, want 90,000", n)
	}
	if _, ok := g.Paused("https://100000.example"); !ok {
		t.Error("the origin paused last was forgotten")
	}
	if _, ok := g.Paused("https://0.example"); ok {
		t.Error("the origin whose pause ends first was kept")
	}
}
