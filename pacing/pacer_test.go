package pacing

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Timing tolerances that hold on a loaded 2-core machine running -race.
// A start is measured when Acquire has returned to the test's goroutine,
// which a loaded machine may run well after the slot (20 ms seen in make
// test, 31 ms with two other suites running beside it): a late start
// brings the next one closer by as much, less the 5 ms padding. 50 ms
// stays far from the few milliseconds apart that unshared schedules give
// (every interval here is 200 ms).
const (
	gapSlack   = 50 * time.Millisecond  // a gap may be this much under the interval
	totalSlack = 500 * time.Millisecond // a run may end this much after the ideal
)

// notifyStore tells when each reservation has been made, so a test can
// order requests without sleeping.
type notifyStore struct {
	Store
	reserved chan Reservation
}

func (s *notifyStore) Reserve(ctx context.Context, key string, interval, maxWait time.Duration) (Reservation, error) {
	r, err := s.Store.Reserve(ctx, key, interval, maxWait)
	s.reserved <- r
	return r, err
}

// start is a request let through: request n (requestKey in its context),
// when Acquire returned, and when the test released its permit.
type start struct {
	n            int
	at, released time.Time
}

// startTimes runs n requests on p at once (request i on keys[i%len(keys)],
// numbered i in its context) and returns when each one was let through and
// released, per key, in the order they were let through.
func startTimes(t *testing.T, p *Pacer, n int, interval time.Duration, keys ...string) map[string][]start {
	t.Helper()
	var mu sync.Mutex
	starts := make(map[string][]start)
	var wg sync.WaitGroup
	for i := range n {
		key := keys[i%len(keys)]
		wg.Go(func() {
			ctx := context.WithValue(context.Background(), requestKey{}, i)
			permit, err := p.Acquire(ctx, Request{Key: key, Interval: interval})
			now := time.Now()
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			released := time.Now()
			permit.Release()
			mu.Lock()
			starts[key] = append(starts[key], start{n: i, at: now, released: released})
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, s := range starts {
		slices.SortFunc(s, func(a, b start) int { return a.at.Compare(b.at) })
	}
	return starts
}

// checkSpacing checks that starts are at least interval apart (less
// gapSlack) and the last starts within totalSlack of the ideal: the
// intervals, and the time the test's goroutines took to release their
// permits, which the pacer waits for (the gate times a request from the
// previous one's release) and which a loaded machine stretches.
func checkSpacing(t *testing.T, starts []start, interval time.Duration, want int) {
	t.Helper()
	if len(starts) != want {
		t.Fatalf("%d requests let through, want %d", len(starts), want)
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].at.Sub(starts[i-1].at); gap < interval-gapSlack {
			t.Errorf("requests %d and %d only %v apart, less than %v by more than %v", i-1, i, gap, interval, gapSlack)
		}
	}
	ideal := time.Duration(len(starts)-1)*interval + releasing(starts)
	if total := starts[len(starts)-1].at.Sub(starts[0].at); total > ideal+totalSlack {
		t.Errorf("%d requests took %v, ideal %v (the intervals and %v the test took to release them)", len(starts), total, ideal, releasing(starts))
	}
}

// releasing is how long the test took to release the permits of starts
// but the last, once let through: measured, not guessed.
func releasing(starts []start) time.Duration {
	var d time.Duration
	for _, s := range starts[:len(starts)-1] {
		d += s.released.Sub(s.at)
	}
	return d
}

func TestPacerSpacesConcurrentRequests(t *testing.T) {
	t.Parallel()
	const interval = 200 * time.Millisecond
	p := New(Options{MaxWait: time.Minute})
	starts := startTimes(t, p, 6, interval, "origin")
	checkSpacing(t, starts["origin"], interval, 6)
}

func TestPacerKeysDoNotSlowEachOther(t *testing.T) {
	t.Parallel()
	const interval = 200 * time.Millisecond
	p := New(Options{MaxWait: time.Minute})
	begin := time.Now()
	starts := startTimes(t, p, 8, interval, "a", "b")
	checkSpacing(t, starts["a"], interval, 4)
	checkSpacing(t, starts["b"], interval, 4)
	for key, s := range starts {
		if took, ideal := s[len(s)-1].at.Sub(begin), 3*interval+releasing(s); took > ideal+totalSlack {
			t.Errorf("key %s: 4 requests took %v, ideal %v (the keys slowed each other)", key, took, ideal)
		}
	}
}

func TestPacerUnpacedRequestsAreNotHeld(t *testing.T) {
	p := New(Options{MaxWait: 0})
	for range 3 {
		permit, err := p.Acquire(context.Background(), Request{Key: "k"})
		if err != nil || permit.Waited != 0 {
			t.Fatalf("unpaced request: waited %v, err %v", permit.Waited, err)
		}
	}
}

func TestPacerRefusesBeyondMaxWait(t *testing.T) {
	clock := newFakeClock()
	store := NewMemory(MemoryOptions{Clock: clock.Now})
	ctx := context.Background()
	for _, tt := range []struct {
		name       string
		padding    time.Duration
		retryAfter time.Duration
		header     int64
	}{
		{"no padding", -1, 10 * time.Second, 10},
		// The documented 5 ms, as a literal: a changed default must fail here.
		{"default padding", 0, 10*time.Second + 5*time.Millisecond, 11},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := New(Options{Store: store, MaxWait: 0, Padding: tt.padding})
			key := "k-" + tt.name
			if _, err := p.Acquire(ctx, Request{Key: key, Interval: 10 * time.Second}); err != nil {
				t.Fatal(err)
			}
			before, _ := store.Pending(ctx, key)
			_, err := p.Acquire(ctx, Request{Key: key, Interval: 10 * time.Second})
			var refused *RefusedError
			if !errors.As(err, &refused) || !errors.Is(err, ErrRateLimited) || refused.Reason != ReasonSlot {
				t.Fatalf("second request: got %v, want a slot refusal", err)
			}
			if refused.RetryAfter != tt.retryAfter || RetryAfterSeconds(refused.RetryAfter) != tt.header {
				t.Errorf("RetryAfter %v (header %d), want %v (%d)", refused.RetryAfter,
					RetryAfterSeconds(refused.RetryAfter), tt.retryAfter, tt.header)
			}
			if after, _ := store.Pending(ctx, key); after != before {
				t.Errorf("refusal changed the schedule: pending %v -> %v", before, after)
			}
		})
	}
}

// TestPacerFirstComeFirstServed: requests that reserve in a known order are
// let through in that order.
// Requests get their slots in the order they ask, and are let through in
// that order. The order is recorded while each holds its permit (the next
// one is let through only after its release: regression, a request
// descheduled between its Release and recording its turn was counted
// after the next). A request whose goroutine was not run for an interval
// after its slot is rightly overtaken, since the gate lets go whoever
// reaches it first once the interval has passed: that is measured (the
// time Acquire took beyond the waits the pacer made, Permit.Waited), not
// guessed, and logged.
func TestPacerFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	store := &notifyStore{Store: NewMemory(MemoryOptions{}), reserved: make(chan Reservation)}
	p := New(Options{Store: store, MaxWait: time.Minute})
	const n = 5
	const interval = 50 * time.Millisecond
	var mu sync.Mutex
	var order []int
	stalled := make([]time.Duration, n) // Acquire's time beyond Permit.Waited
	slots := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			asked := time.Now()
			permit, err := p.Acquire(context.Background(), Request{Key: "k", Interval: interval})
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			stalled[i] = time.Since(asked) - permit.Waited
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			permit.Release()
		})
		r := <-store.reserved // request i has its slot before request i+1 asks
		slots[i] = r.slot
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if gap := time.Duration(slots[i] - slots[i-1]); gap < interval+DefaultPadding {
			t.Errorf("slots of requests %d and %d %v apart, want %v", i-1, i, gap, interval+DefaultPadding)
		}
	}
	for pos, i := range order {
		for _, j := range order[pos+1:] { // j let through after i
			switch {
			case j > i:
			case stalled[j] >= interval+DefaultPadding:
				t.Logf("request %d overtook request %d, whose goroutine was not run for %v: let through in order %v", i, j, stalled[j], order)
			default:
				t.Errorf("request %d overtook request %d (not held up: %v beyond its waits): let through in order %v", i, j, stalled[j], order)
			}
		}
	}
}

// TestPacerCancelWhileHeld: a client hanging up while held gets its error
// at once, its slot back when nobody reserved after it, and leaves nothing
// running.
func TestPacerCancelWhileHeld(t *testing.T) {
	clock := newFakeClock() // frozen: the reserved waits are exact
	store := &notifyStore{Store: NewMemory(MemoryOptions{Clock: clock.Now}), reserved: make(chan Reservation, 1)}
	p := New(Options{Store: store, MaxWait: time.Hour, Padding: -1})
	req := Request{Key: "k", Interval: 10 * time.Second}
	if _, err := p.Acquire(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	<-store.reserved
	goroutines := runtime.NumGoroutine()

	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := p.Acquire(ctx, req)
			done <- err
		}()
		if r := <-store.reserved; r.Wait != 10*time.Second {
			t.Fatalf("held for %v, want 10s", r.Wait)
		}
		cancelled := time.Now()
		cancel()
		err := <-done
		if took := time.Since(cancelled); took > 2*time.Second { // far under the 10 s hold, generous for a loaded machine
			t.Errorf("Acquire returned %v after the cancel", took)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		if d, _ := store.Pending(context.Background(), "k"); d != 10*time.Second {
			t.Fatalf("after cancel pending = %v, want the slot back (10s)", d)
		}
	}
	// A holder's goroutine sends its error and only then exits, so the count
	// may lag by a moment; a leak stays.
	if now := settledGoroutines(goroutines, 2*time.Second); now > goroutines {
		t.Errorf("goroutines: %d before, %d after 20 cancelled holds", goroutines, now)
	}
}

// settledGoroutines returns the goroutine count once it is at most want, or
// the last count seen when limit passes first.
func settledGoroutines(want int, limit time.Duration) int {
	deadline := time.Now().Add(limit)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

func TestPacerConcurrencyLimit(t *testing.T) {
	ctx := context.Background()
	req := Request{Key: "k", Origin: "o"}

	t.Run("waits for a permit", func(t *testing.T) {
		p := New(Options{MaxWait: time.Minute, MaxConcurrency: 2})
		a, _ := p.Acquire(ctx, req)
		b, _ := p.Acquire(ctx, req)
		got := make(chan Permit)
		go func() {
			c, err := p.Acquire(ctx, req)
			if err != nil {
				t.Error(err)
			}
			got <- c
		}()
		waitFor(t, func() bool { return queued(p, "o") == 1 })
		a.Release()
		a.Release() // a second Release does nothing
		c := <-got
		if c.Waited <= 0 {
			t.Errorf("third request waited %v", c.Waited)
		}
		b.Release()
		c.Release()
		if n := p.limit.size(); n != 0 {
			t.Errorf("limiter keeps %d keys after all releases", n)
		}
	})
	t.Run("waiters are served first come first served", func(t *testing.T) {
		p := New(Options{MaxWait: time.Minute, MaxConcurrency: 1})
		first, _ := p.Acquire(ctx, req)
		order := make(chan int, 3)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				permit, err := p.Acquire(ctx, req)
				if err != nil {
					t.Error(err)
				}
				order <- i
				permit.Release()
			})
			waitFor(t, func() bool { return queued(p, "o") == i+1 })
		}
		first.Release()
		wg.Wait()
		close(order)
		var got []int
		for i := range order {
			got = append(got, i)
		}
		if !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("served in order %v", got)
		}
	})
	t.Run("refused when no permit within maxWait", func(t *testing.T) {
		p := New(Options{MaxWait: 50 * time.Millisecond, MaxConcurrency: 1})
		a, _ := p.Acquire(ctx, req)
		defer a.Release()
		_, err := p.Acquire(ctx, req)
		var refused *RefusedError
		if !errors.As(err, &refused) || refused.Reason != ReasonConcurrency || refused.RetryAfter <= 0 {
			t.Fatalf("got %v, want a concurrency refusal", err)
		}
		if queued(p, "o") != 0 {
			t.Error("refused waiter still queued")
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		p := New(Options{MaxWait: time.Minute, MaxConcurrency: 1})
		a, _ := p.Acquire(ctx, req)
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() {
			_, err := p.Acquire(cctx, req)
			done <- err
		}()
		waitFor(t, func() bool { return queued(p, "o") == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		a.Release()
		if n := p.limit.size(); n != 0 {
			t.Errorf("limiter keeps %d keys", n)
		}
	})
	t.Run("never more than the limit in flight", func(t *testing.T) {
		p := New(Options{MaxWait: time.Minute, MaxConcurrency: 3})
		var inFlight, peak atomic.Int32
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				permit, err := p.Acquire(ctx, req)
				if err != nil {
					t.Error(err)
					return
				}
				n := inFlight.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				runtime.Gosched()
				inFlight.Add(-1)
				permit.Release()
			})
		}
		wg.Wait()
		if peak.Load() > 3 {
			t.Fatalf("%d in flight at once, limit 3", peak.Load())
		}
		if n := p.limit.size(); n != 0 {
			t.Errorf("limiter keeps %d keys", n)
		}
	})
	t.Run("a refused slot releases the permit", func(t *testing.T) {
		p := New(Options{MaxWait: 0, MaxConcurrency: 1})
		paced := Request{Key: "k", Origin: "o", Interval: time.Hour}
		a, err := p.Acquire(ctx, paced)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		if _, err := p.Acquire(ctx, paced); !errors.Is(err, ErrRateLimited) {
			t.Fatalf("got %v", err)
		}
		if n := p.limit.size(); n != 0 {
			t.Errorf("permit kept after the refusal (%d keys)", n)
		}
	})
}

// queued returns the number of requests waiting for a permit of key.
func queued(p *Pacer, key string) int {
	p.limit.mu.Lock()
	defer p.limit.mu.Unlock()
	if k := p.limit.keys[key]; k != nil {
		return len(k.waiters)
	}
	return 0
}

// waitFor polls cond (bounded) until it holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond) // polling interval
	}
}

func TestLimitsInterval(t *testing.T) {
	const s = time.Second
	for _, tt := range []struct {
		name   string
		limits Limits
		asked  time.Duration
		want   time.Duration
		refuse bool
	}{
		{"nothing asked, no floor", Limits{}, 0, 0, false},
		{"floor applies", Limits{Floor: 2 * s}, 0, 2 * s, false},
		{"floor below asked", Limits{Floor: 2 * s}, 5 * s, 5 * s, false},
		{"no cap", Limits{}, time.Hour, time.Hour, false},
		{"under the cap", Limits{Max: 10 * s}, 10 * s, 10 * s, false},
		{"clamped", Limits{Max: 10 * s}, 30 * s, 10 * s, false},
		{"refused over the cap", Limits{Max: 10 * s, RefuseOverMax: true}, 30 * s, 0, true},
		{"negative asked", Limits{}, -s, 0, false},
	} {
		got, err := tt.limits.Interval(tt.asked)
		if got != tt.want || (err != nil) != tt.refuse {
			t.Errorf("%s: got %v, %v; want %v, refuse %v", tt.name, got, err, tt.want, tt.refuse)
		}
		var refused *RefusedError
		if tt.refuse && (!errors.Is(err, ErrOverMaxDelay) || !errors.Is(err, ErrRateLimited) ||
			!errors.As(err, &refused) || refused.RetryAfter != tt.asked) {
			t.Errorf("%s: error %v does not match ErrOverMaxDelay/ErrRateLimited with RetryAfter %v", tt.name, err, tt.asked)
		}
	}
}
