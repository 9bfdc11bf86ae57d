package pacing

import (
	"github.com/robotsgate/robotsgate/internal/redistest"

	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// testProbe is the breakers' probe interval in these tests.
const testProbe = 200 * time.Millisecond

// newFallback returns a Fallback over a Redis store on srv.
func newFallback(t *testing.T, srv *redistest.Server, onError OnError) *Fallback {
	t.Helper()
	f, err := NewFallback(newRedisStore(t, srv), FallbackOptions{OnError: onError, ProbeInterval: testProbe})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// waitShared polls until f reserves on its primary again (bounded).
func waitShared(t *testing.T, f *Fallback) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := f.Reserve(context.Background(), "probe", time.Millisecond, time.Minute)
		if err == nil && !r.local && !f.Degraded() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fallback did not go back to the primary: %+v, %v", r, err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

func TestFallbackRefuse(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	f := newFallback(t, srv, OnErrorRefuse)
	ctx := context.Background()
	if _, err := f.Reserve(ctx, "k", time.Second, time.Minute); err != nil || f.Degraded() {
		t.Fatalf("healthy: %v, degraded %v", err, f.Degraded())
	}
	srv.Kill()
	reserveFails(t, f)
	if !f.Degraded() {
		t.Error("not degraded after a failure")
	}
	// While the breaker is open the refusal is immediate and says when to
	// come back.
	start := time.Now()
	_, err := f.Reserve(ctx, "k", time.Second, time.Minute)
	var ue *UnavailableError
	if !errors.As(err, &ue) || time.Since(start) > 500*time.Millisecond { // generous for a loaded machine
		t.Fatalf("open breaker: %v after %v", err, time.Since(start))
	}
	if ue.RetryAfter <= 0 || ue.RetryAfter > testProbe || RetryAfterSeconds(ue.RetryAfter) != 1 {
		t.Errorf("RetryAfter %v, want in (0, %v]", ue.RetryAfter, testProbe)
	}
	if _, err := f.Pending(ctx, "k"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Pending while refusing: %v", err)
	}
	srv.Restart()
	waitShared(t, f)
}

// TestFallbackLocal: Redis dies, requests are paced locally from its last
// slot on, each answered within failFast, on a schedule no longer than the
// interval needs; Redis comes back, shared pacing resumes no earlier than
// the local schedule.
//
// The schedule is checked on the local store's slots, exactly: under go
// test -race -count=3 beside two CPU hogs, "3 requests took 914ms, ideal
// 400ms" (500 ms allowed) once, with the moments the requests were let
// through, which a request that reached the failing Redis late, or a
// goroutine run late, pushes back.
func TestFallbackLocal(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	f := newFallback(t, srv, OnErrorLocal)
	const interval = 200 * time.Millisecond
	store := &slotStore{Store: f}
	p := New(Options{Store: store, MaxWait: time.Minute})

	// A shared slot, then Redis dies: local pacing starts from that slot.
	ctx := context.Background()
	before := time.Now()
	if permit, err := p.Acquire(ctx, Request{Key: "origin", Interval: interval}); err != nil {
		t.Fatal(err)
	} else {
		permit.Release()
	}
	srv.Kill()
	starts := startTimes(t, p, 3, interval, "origin")["origin"]
	if len(starts) != 3 {
		t.Fatalf("%d requests let through, want 3", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].at.Sub(starts[i-1].at); gap < interval-gapSlack {
			t.Errorf("requests %d and %d only %v apart, less than %v by more than %v", i-1, i, gap, interval, gapSlack)
		}
	}
	if gap := starts[0].at.Sub(before); gap < interval-gapSlack {
		t.Errorf("first local request %v after the last shared one, want >= %v", gap, interval)
	}
	var local []Reservation
	for n := range 3 {
		r := store.reservation(t, n)
		if !r.local {
			t.Errorf("request %d reserved on Redis after it died", n)
		}
		if took := store.took[n]; took > failFast {
			t.Errorf("request %d: the fallback answered after %v, want < %v", n, took, failFast)
		}
		local = append(local, r)
	}
	slices.SortFunc(local, func(a, b Reservation) int { return cmp.Compare(a.slot, b.slot) })
	for i := 1; i < len(local); i++ {
		// slot = max(now, next): the previous slot plus the padded interval,
		// or now when that has passed (no wait).
		gap := time.Duration(local[i].slot - local[i-1].slot)
		if padded := interval + DefaultPadding; gap < padded || gap > padded && local[i].Wait != 0 {
			t.Errorf("local slots %d and %d are %v apart (wait %v), want %v, or more with no wait", i-1, i, gap, local[i].Wait, padded)
		}
	}
	if !f.Degraded() {
		t.Error("not degraded")
	}
	if r, err := f.Reserve(ctx, "slow", 10*time.Second, time.Minute); err != nil || !r.local || r.Wait != 0 {
		t.Fatalf("local reservation: %+v, %v", r, err)
	}

	// Redis is back (empty): shared pacing resumes, no earlier than the
	// local schedule.
	srv.Restart()
	waitShared(t, f)
	localNext, _ := f.local.Pending(ctx, "slow")
	r, err := f.Reserve(ctx, "slow", 10*time.Second, time.Minute)
	if err != nil || r.local {
		t.Fatalf("after recovery: %+v, %v", r, err)
	}
	if localNext < 5*time.Second || r.Wait < localNext-gapSlack {
		t.Errorf("first shared slot after recovery in %v, local schedule said %v", r.Wait, localNext)
	}
}

func TestFallbackFrozenRedis(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	f := newFallback(t, srv, OnErrorLocal)
	ctx := context.Background()
	if _, err := f.Reserve(ctx, "k", time.Second, time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	start := time.Now()
	r, err := f.Reserve(ctx, "k2", time.Second, time.Minute)
	if err != nil || !r.local || time.Since(start) > failFast {
		t.Fatalf("first call on a frozen Redis: %+v, %v after %v", r, err, time.Since(start))
	}
	// Open breaker: answered locally at once.
	start = time.Now()
	for range 100 {
		if _, err := f.Reserve(ctx, "k3", time.Millisecond, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// Through the frozen Redis each would wait out its 500 ms read timeout.
	if took := time.Since(start); took > time.Second {
		t.Errorf("100 reservations with the breaker open took %v", took)
	}
	if err := f.Healthy(ctx); err == nil {
		t.Error("Healthy on a frozen Redis")
	}
	srv.Thaw()
	waitShared(t, f)
}

// TestFallbackProbesADeadPrimaryOncePerSecond: with the default probe
// interval (the documented one probe per second), a steady stream of
// reservations against a dead Redis reaches it once, then once a second,
// and each of those failed calls is reported to OnFailure; the others are
// answered by the policy without touching Redis.
func TestFallbackProbesADeadPrimaryOncePerSecond(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	var failures atomic.Int64
	f, err := NewFallback(newRedisStore(t, srv), FallbackOptions{OnError: OnErrorLocal, OnFailure: func(error) { failures.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.Reserve(ctx, "k", time.Millisecond, time.Minute); err != nil || failures.Load() != 0 {
		t.Fatalf("healthy: %v, %d failures", err, failures.Load())
	}
	srv.Kill()
	tick := time.NewTicker(10 * time.Millisecond) // the stream of requests, not a wait
	defer tick.Stop()
	calls, start := 0, time.Now()
	for time.Since(start) < 2500*time.Millisecond {
		if _, err := f.Reserve(ctx, "k", time.Millisecond, time.Minute); err != nil {
			t.Fatal(err)
		}
		calls++
		<-tick.C
	}
	// The first failure, then probes about 1 s and 2 s later: 3. Fewer
	// than 2 would mean no probe; more than 4, probes less than a second
	// apart.
	if got := failures.Load(); got < 2 || got > 4 {
		t.Errorf("%d calls over %v against a dead Redis: %d failed calls reached it, want 3 (one, then one per second)", calls, time.Since(start).Round(time.Millisecond), got)
	}
}

func TestFallbackCallerCancelIsNotAFailure(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	f := newFallback(t, srv, OnErrorRefuse)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Reserve(ctx, "k", time.Second, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if f.Degraded() {
		t.Error("a cancelled caller opened the breaker")
	}
}

func TestNewFallbackValidates(t *testing.T) {
	if _, err := NewFallback(nil, FallbackOptions{}); err == nil {
		t.Error("no error without a primary")
	}
	if _, err := NewFallback(NewMemory(MemoryOptions{}), FallbackOptions{OnError: "retry"}); err == nil {
		t.Error("no error for an unknown policy")
	}
}
