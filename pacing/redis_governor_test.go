package pacing

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fleetGovernor is a governor sharing through Redis r, following the
// channel until the test ends.
func fleetGovernor(t *testing.T, r *Redis, backoff BackoffParams, adaptive AdaptiveParams, jitter float64) *Governor {
	t.Helper()
	g := NewGovernor(backoff, adaptive, GovernorOptions{Shared: r.GovernorShared(), Jitter: func() float64 { return jitter }})
	subscribed := make(chan struct{}, 1)
	r.resynced = func() {
		select {
		case subscribed <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Follow(ctx, g, nil)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	<-subscribed // from now on, what the fleet publishes reaches g
	return g
}

// eventually polls cond for up to 5 s: what another instance publishes
// arrives on its own goroutine, and nothing signals it to the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
	}
}

// The Redis script computes the same pauses as the memory arithmetic
// (TestPausesFollowRetryAfterOrTheSeries): the series with its jitter,
// capped at max, a Retry-After beyond max obeyed up to retry_after_max; on
// Redis' clock, so the figures are exact.
func TestRedisPausesFollowTheSameArithmetic(t *testing.T) {
	srv := startRedis(t)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	params := BackoffParams{Enabled: true, Statuses: []int{429, 503}, Initial: ms(50), Factor: 2, Max: ms(150), RetryAfterMax: ms(2000)}
	tests := []struct {
		name    string
		jitter  float64
		answers []Answer
		want    []time.Duration
	}{
		{"series, capped", 0, []Answer{{Status: 503}, {Status: 503}, {Status: 503}}, []time.Duration{ms(50), ms(100), ms(150)}},
		{"jitter", 1, []Answer{{Status: 429}}, []time.Duration{ms(55)}},
		{"Retry-After beyond max, obeyed", 0, []Answer{{Status: 429, RetryAfter: "1"}}, []time.Duration{ms(1000)}},
		{"Retry-After, capped at retry_after_max", 0, []Answer{{Status: 429, RetryAfter: "3600"}}, []time.Duration{ms(2000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGovernor(params, AdaptiveParams{}, GovernorOptions{Shared: newRedisStore(t, srv).GovernorShared(),
				Jitter: func() float64 { return tt.jitter }})
			origin := "https://" + t.Name() + ".example"
			for i, a := range tt.answers {
				a.At = time.Now()
				p, _ := g.Observe(context.Background(), origin, a)
				if got := p.Until.Sub(a.At); got < tt.want[i]-time.Millisecond || got > tt.want[i] {
					t.Errorf("answer %d: pause %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
}

// Two instances on one Redis: a 429 seen by one pauses the other, a
// success seen by one ends the series for both, an operator's clear ends
// the pause everywhere, and an instance that starts during a pause reads
// it from Redis. Response times reach the other instance too.
func TestRedisSharesPausesAndResponseTimesWithTheFleet(t *testing.T) {
	srv := startRedis(t)
	params := testBackoff()
	adaptive := AdaptiveParams{Factor: 5, Max: 30 * time.Second}
	a := fleetGovernor(t, newRedisStore(t, srv), params, adaptive, 0)
	b := fleetGovernor(t, newRedisStore(t, srv), params, adaptive, 0)
	const origin = "https://a.example"

	a.Observe(context.Background(), origin, Answer{Status: 429, RetryAfter: "30"})
	eventually(t, "the other instance paused", func() bool { _, ok := b.Paused(origin); return ok })
	if p, _ := b.Paused(origin); p.Status != 429 || p.RetryAfter != "30" || time.Until(p.Until) < 29*time.Second {
		t.Errorf("the other instance's pause: %+v", p)
	}
	late := fleetGovernor(t, newRedisStore(t, srv), params, adaptive, 0)
	eventually(t, "an instance started during the pause reads it", func() bool { _, ok := late.Paused(origin); return ok })

	b.Observe(context.Background(), origin, Answer{Status: 503})
	a.Observe(context.Background(), origin, Answer{Status: 200})
	eventually(t, "the success ends the series everywhere", func() bool { p, _ := b.Paused(origin); return p.Streak == 0 })

	if err := b.Clear(context.Background(), origin); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the clear reaches every instance", func() bool {
		_, pa := a.Paused(origin)
		_, pl := late.Paused(origin)
		return !pa && !pl
	})

	a.Observe(context.Background(), origin, Answer{Status: 200, Latency: 200 * time.Millisecond})
	eventually(t, "the response time reaches the other instance", func() bool { return b.AdaptiveInterval(origin) == time.Second })
}

// pacing.max_concurrency across a fleet: two pacers on one Redis, a limit
// of 1 for an origin: while one holds a permit the other waits for it and
// goes once it is given back; beyond max_wait it is refused; a permit of
// another origin is not held up.
func TestRedisConcurrencyHoldsAcrossInstances(t *testing.T) {
	srv := startRedis(t)
	a := New(Options{MaxWait: 2 * time.Second, MaxConcurrency: 1, Shared: newRedisStore(t, srv)})
	b := New(Options{MaxWait: 2 * time.Second, MaxConcurrency: 1, Shared: newRedisStore(t, srv)})
	short := New(Options{MaxWait: 300 * time.Millisecond, MaxConcurrency: 1, Shared: newRedisStore(t, srv)})
	held, err := a.Acquire(context.Background(), Request{Key: "o *", Origin: "https://o.example"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.Acquire(context.Background(), Request{Key: "o *", Origin: "https://o.example"}); !errors.Is(err, ErrRateLimited) {
		t.Errorf("another instance, its max_wait passing while the permit is held: %v, want a refusal", err)
	}
	other, err := b.Acquire(context.Background(), Request{Key: "p *", Origin: "https://p.example"})
	if err != nil || other.Waited > gapSlack {
		t.Errorf("another origin: waited %v, %v; want at once", other.Waited, err)
	}
	other.Release()
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(500 * time.Millisecond) // the first request's time at the origin
		released <- time.Now()
		held.Release()
	}()
	second, err := b.Acquire(context.Background(), Request{Key: "o *", Origin: "https://o.example"})
	got := time.Now()
	if err != nil {
		t.Fatalf("the other instance: %v", err)
	}
	defer second.Release()
	if at := <-released; got.Before(at) {
		t.Errorf("the other instance went %v before the permit was given back", at.Sub(got))
	}
}

// After a pause shared through Redis each instance sends its own probe
// (one each, its other requests waiting for it), and settles on its own
// probe's answer; a pause the other instance's probe earns holds both
// again.
func TestFleetInstancesProbeEachOnTheirOwn(t *testing.T) {
	srv := startRedis(t)
	params := BackoffParams{Enabled: true, Statuses: []int{429, 503}, Initial: 50 * time.Millisecond, Factor: 2, Max: time.Hour}
	a := fleetGovernor(t, newRedisStore(t, srv), params, AdaptiveParams{}, 0)
	b := fleetGovernor(t, newRedisStore(t, srv), params, AdaptiveParams{}, 0)
	const origin = "https://a.example"
	a.Observe(context.Background(), origin, Answer{Status: 503})
	eventually(t, "the other instance holds the origin's requests", func() bool { return b.Holds(origin) })
	eventually(t, "the pause ended", func() bool { _, pa := a.Paused(origin); _, pb := b.Paused(origin); return !pa && !pb })
	probes := map[*Governor]*Probe{}
	for _, g := range []*Governor{a, b} {
		if h := g.admit(origin, nil, true); h.probe == nil {
			t.Fatalf("the first request after the pause is not the probe: %+v", h)
		} else {
			probes[g] = h.probe
		}
		if h := g.admit(origin, nil, true); h.wait == nil {
			t.Fatalf("the second request after the pause does not wait for the probe: %+v", h)
		}
	}
	probes[a].end(true)
	if a.Holds(origin) || !b.Holds(origin) {
		t.Errorf("after the first instance's probe got 200: holds %v and %v, want false and true", a.Holds(origin), b.Holds(origin))
	}
	b.Observe(context.Background(), origin, Answer{Status: 429})
	probes[b].end(true)
	eventually(t, "the second probe's 429 holds the first instance's requests", func() bool { return a.Holds(origin) })
}
