package pacing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// An origin that answers 429 with Retry-After: 7200 is not contacted
// again for the whole two hours, on an injected clock: every request
// before then is refused (a wait of 1 s may not last two hours) with the
// time left of the pause as its Retry-After, at 1 h (pacing.backoff.max,
// where the pause used to end) as at 1 h 59 min 58 s; at 2 h the first
// request goes, as the origin's probe.
func TestOriginAnswering429RetryAfter7200IsNotContactedForTheWholeTime(t *testing.T) {
	const origin = "https://a.example"
	g, clock := newTestGovernor(testBackoff(), AdaptiveParams{}, 0)
	p := New(Options{MaxWait: time.Second, Governor: g})
	if _, ok := g.Observe(context.Background(), origin, Answer{Status: 429, RetryAfter: "7200"}); !ok {
		t.Fatal("the 429 paused nothing")
	}
	req := Request{Key: origin + " *", PauseKey: origin}
	start := clock.Now()
	for _, at := range []time.Duration{0, time.Second, 59 * time.Minute, time.Hour, time.Hour + time.Second, 2*time.Hour - 2*time.Second} {
		clock.Advance(start.Add(at).Sub(clock.Now()))
		permit, err := p.Acquire(context.Background(), req)
		var paused *PausedError
		if !errors.As(err, &paused) {
			permit.Release()
			t.Fatalf("at %v: %v; want the request refused, the origin paused for 2h", at, err)
		}
		if want := 2*time.Hour - at; paused.RetryAfter != want || RetryAfterSeconds(paused.RetryAfter) != int64(want/time.Second) {
			t.Errorf("at %v: Retry-After %v, want the time left, %v", at, paused.RetryAfter, want)
		}
	}
	clock.Advance(start.Add(2 * time.Hour).Sub(clock.Now()))
	permit, err := p.Acquire(context.Background(), req)
	if err != nil || permit.probe == nil {
		t.Fatalf("at 2h: %v (probe %v), want the request to go as the probe", err, permit.probe != nil)
	}
	permit.Answered()
}

// 500, 502, 504 and timeouts pause an origin at the third in a row and
// not before (pacing.backoff.failures.in_a_row: 3), each further one
// pausing it again for the next term of the series; a success in between
// starts the count again, and so do failures further apart than
// pacing.backoff.max; a refused connection, a 501 or 404 do not count.
func TestFailuresPauseAfterTheThresholdAndNotBefore(t *testing.T) {
	timeout := Answer{ConnectionError: true, Timeout: true}
	for _, first := range []Answer{{Status: 500}, {Status: 502}, {Status: 504}, timeout} {
		t.Run(fmt.Sprint(first.Status, first.Timeout), func(t *testing.T) {
			const origin = "https://a.example"
			g, clock := newTestGovernor(testBackoff(), AdaptiveParams{}, 0)
			for i := 1; i <= 2; i++ {
				if p, ok := g.Observe(context.Background(), origin, first); ok {
					t.Fatalf("failure %d paused the origin: %+v", i, p)
				}
				if _, ok := g.Paused(origin); ok {
					t.Fatalf("paused after %d failures", i)
				}
				clock.Advance(time.Second)
			}
			p, ok := g.Observe(context.Background(), origin, first)
			if !ok || p.Until.Sub(clock.Now()) != 5*time.Second || p.Failures != 3 || !strings.Contains(p.Cause(), "(3 failures in a row)") {
				t.Fatalf("the third failure: %+v %v (%s), want a 5s pause", p, ok, p.Cause())
			}
			if first.Timeout && !strings.Contains(p.Cause(), "did not answer in time") {
				t.Errorf("cause %q", p.Cause())
			}
			clock.Advance(5 * time.Second)
			if p, ok := g.Observe(context.Background(), origin, Answer{Status: 502}); !ok || p.Until.Sub(clock.Now()) != 10*time.Second {
				t.Errorf("a fourth failure in a row: %+v %v, want the next term, 10s", p, ok)
			}
		})
	}

	t.Run("a success starts the count again", func(t *testing.T) {
		g, _ := newTestGovernor(testBackoff(), AdaptiveParams{}, 0)
		for i, a := range []Answer{{Status: 500}, {Status: 500}, {Status: 200}, {Status: 500}, {Status: 504}} {
			if _, ok := g.Observe(context.Background(), "https://a.example", a); ok {
				t.Fatalf("answer %d (%d) paused the origin", i, a.Status)
			}
		}
	})
	t.Run("failures a quiet max apart are not in a row", func(t *testing.T) {
		g, clock := newTestGovernor(testBackoff(), AdaptiveParams{}, 0)
		for i := range 4 {
			if _, ok := g.Observe(context.Background(), "https://a.example", Answer{Status: 500}); ok {
				t.Fatalf("failure %d, an hour after the previous, paused the origin", i)
			}
			clock.Advance(time.Hour)
		}
	})
	t.Run("other answers do not count", func(t *testing.T) {
		g, _ := newTestGovernor(testBackoff(), AdaptiveParams{}, 0)
		for range 5 {
			for _, a := range []Answer{{ConnectionError: true}, {Status: 501}, {Status: 404}} {
				if _, ok := g.Observe(context.Background(), "https://a.example", a); ok {
					t.Fatalf("%+v counted as a failure", a)
				}
			}
		}
	})
	t.Run("in_a_row 0 counts none", func(t *testing.T) {
		params := testBackoff()
		params.FailuresInARow = 0
		g, _ := newTestGovernor(params, AdaptiveParams{}, 0)
		for range 5 {
			if _, ok := g.Observe(context.Background(), "https://a.example", Answer{Status: 500}); ok {
				t.Fatal("a failure paused the origin")
			}
		}
	})
}

// A fleet counts failures together: two instances on one Redis see two
// and one 502s, and the third pauses the origin for both; a success at
// either starts the count again for both. A Retry-After beyond
// pacing.backoff.max is obeyed through Redis as in memory.
func TestRedisFleetCountsFailuresInARow(t *testing.T) {
	srv := startRedis(t)
	params := testBackoff()
	a := fleetGovernor(t, newRedisStore(t, srv), params, AdaptiveParams{}, 0)
	b := fleetGovernor(t, newRedisStore(t, srv), params, AdaptiveParams{}, 0)
	const origin = "https://fleet.example"
	ctx := context.Background()
	for i, g := range []*Governor{a, b} {
		if _, ok := g.Observe(ctx, origin, Answer{Status: 502}); ok {
			t.Fatalf("failure %d paused the origin", i+1)
		}
	}
	p, ok := a.Observe(ctx, origin, Answer{Status: 504})
	if !ok || p.Failures != 3 {
		t.Fatalf("the fleet's third failure in a row: %+v %v, want a pause", p, ok)
	}
	eventually(t, "the other instance applies the pause", func() bool {
		q, ok := b.Paused(origin)
		return ok && q.Failures == 3
	})

	const other = "https://fleet2.example"
	a.Observe(ctx, other, Answer{Status: 500})
	a.Observe(ctx, other, Answer{Status: 500})
	eventually(t, "the other instance learns the count", func() bool {
		v, ok := b.pauses.Load(other)
		if !ok {
			return false
		}
		e := v.(*pauseEntry)
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.fails == 2
	})
	b.Observe(ctx, other, Answer{Status: 200})
	if _, ok := a.Observe(ctx, other, Answer{Status: 500}); ok {
		t.Fatal("a success at one instance did not start the fleet's count again")
	}

	at := time.Now()
	p, _ = a.Observe(ctx, "https://ra.example", Answer{Status: 429, RetryAfter: "7200", At: at})
	if got := p.Until.Sub(at); got < 2*time.Hour-time.Second || got > 2*time.Hour {
		t.Errorf("Retry-After: 7200 through Redis: a pause of %v, want 2h (not pacing.backoff.max)", got)
	}
}
