package pacing

import (
	"github.com/robotsgate/robotsgate/internal/testclock"

	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeClock is the tests' settable clock, starting at a fixed date.
type fakeClock = testclock.Clock

func newFakeClock() *fakeClock { return testclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) }

func TestMemoryReservationArithmetic(t *testing.T) {
	const s = time.Second
	type step struct {
		advance           time.Duration // clock moves before the reservation
		key               string        // "" = "k"
		interval, maxWait time.Duration
		granted           bool
		wait, retryAfter  time.Duration
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"idle key starts now", []step{{interval: 10 * s, maxWait: 60 * s, granted: true}}},
		{"second request waits one interval", []step{
			{interval: 10 * s, maxWait: 60 * s, granted: true},
			{interval: 10 * s, maxWait: 60 * s, granted: true, wait: 10 * s},
			{interval: 10 * s, maxWait: 60 * s, granted: true, wait: 20 * s},
		}},
		{"elapsed time counts", []step{
			{interval: 10 * s, maxWait: 60 * s, granted: true},
			{advance: 4 * s, interval: 10 * s, maxWait: 60 * s, granted: true, wait: 6 * s},
		}},
		{"idle again after next passed", []step{
			{interval: 10 * s, maxWait: 60 * s, granted: true},
			{advance: 11 * s, interval: 10 * s, maxWait: 60 * s, granted: true},
			{interval: 10 * s, maxWait: 60 * s, granted: true, wait: 10 * s},
		}},
		{"wait equal to maxWait is granted", []step{
			{interval: 10 * s, maxWait: 10 * s, granted: true},
			{interval: 10 * s, maxWait: 10 * s, granted: true, wait: 10 * s},
			{interval: 10 * s, maxWait: 10 * s, wait: 20 * s, retryAfter: 10 * s},
		}},
		{"refusal reserves nothing", []step{
			{interval: 10 * s, maxWait: 15 * s, granted: true},
			{interval: 10 * s, maxWait: 15 * s, granted: true, wait: 10 * s},
			{interval: 10 * s, maxWait: 15 * s, wait: 20 * s, retryAfter: 5 * s},
			{interval: 10 * s, maxWait: 15 * s, wait: 20 * s, retryAfter: 5 * s},
			{interval: 10 * s, maxWait: 20 * s, granted: true, wait: 20 * s},
		}},
		{"retry after RetryAfter is granted, a moment earlier is not", []step{
			{interval: 10 * s, maxWait: 15 * s, granted: true},
			{interval: 10 * s, maxWait: 15 * s, granted: true, wait: 10 * s},
			{interval: 10 * s, maxWait: 15 * s, wait: 20 * s, retryAfter: 5 * s},
			{advance: 5*s - 1, interval: 10 * s, maxWait: 15 * s, wait: 15*s + 1, retryAfter: 1},
			{advance: 1, interval: 10 * s, maxWait: 15 * s, granted: true, wait: 15 * s},
		}},
		{"maxWait 0 admits only idle keys", []step{
			{interval: 3 * s, granted: true},
			{interval: 3 * s, wait: 3 * s, retryAfter: 3 * s},
			{advance: 3 * s, interval: 3 * s, granted: true},
		}},
		{"interval may change between requests", []step{
			{interval: 10 * s, maxWait: 60 * s, granted: true},
			{interval: 2 * s, maxWait: 60 * s, granted: true, wait: 10 * s},
			{interval: 2 * s, maxWait: 60 * s, granted: true, wait: 12 * s},
		}},
		{"keys are independent", []step{
			{key: "a", interval: 10 * s, maxWait: 60 * s, granted: true},
			{key: "a", interval: 10 * s, maxWait: 60 * s, granted: true, wait: 10 * s},
			{key: "b", interval: 10 * s, maxWait: 60 * s, granted: true},
			{key: "b", interval: 10 * s, maxWait: 60 * s, granted: true, wait: 10 * s},
			{key: "a", interval: 10 * s, maxWait: 60 * s, granted: true, wait: 20 * s},
		}},
		{"negative interval and maxWait count as 0", []step{
			{interval: -s, maxWait: -s, granted: true},
			{interval: -s, maxWait: -s, granted: true},
		}},
		{"huge interval is clamped", []step{
			{interval: 1 << 62, maxWait: 1 << 62, granted: true},
			{interval: s, maxWait: 1 << 62, granted: true, wait: MaxInterval},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			m := NewMemory(MemoryOptions{Clock: clock.Now})
			for i, st := range tt.steps {
				clock.Advance(st.advance)
				key := st.key
				if key == "" {
					key = "k"
				}
				r, err := m.Reserve(context.Background(), key, st.interval, st.maxWait)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if r.Granted != st.granted || r.Wait != st.wait || r.RetryAfter != st.retryAfter {
					t.Errorf("step %d: got granted=%v wait=%v retryAfter=%v, want %v %v %v",
						i, r.Granted, r.Wait, r.RetryAfter, st.granted, st.wait, st.retryAfter)
				}
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int64
	}{
		{-time.Second, 1}, {0, 1}, {1, 1}, {time.Second, 1}, {time.Second + 1, 2},
		{5 * time.Second, 5}, {10*time.Second + 5*time.Millisecond, 11},
	} {
		if got := RetryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// TestMemoryConcurrentReservationsAreAtomic: reservations racing on one key
// at one instant get every slot exactly once.
func TestMemoryConcurrentReservationsAreAtomic(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryOptions{Clock: clock.Now})
	const n, interval = 64, time.Second
	waits := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, _ := m.Reserve(context.Background(), "k", interval, time.Hour)
			waits[i] = r.Wait
		})
	}
	wg.Wait()
	slices.Sort(waits)
	for i, w := range waits {
		if w != time.Duration(i)*interval {
			t.Fatalf("sorted waits[%d] = %v, want %v (all: %v)", i, w, time.Duration(i)*interval, waits)
		}
	}
}

func TestMemoryCancel(t *testing.T) {
	const iv, mw = 10 * time.Second, time.Hour
	ctx := context.Background()
	reserve := func(t *testing.T, m *Memory) Reservation {
		t.Helper()
		r, _ := m.Reserve(ctx, "k", iv, mw)
		return r
	}
	pending := func(t *testing.T, m *Memory) time.Duration {
		t.Helper()
		d, _ := m.Pending(ctx, "k")
		return d
	}

	t.Run("last reservation is given back", func(t *testing.T) {
		m := NewMemory(MemoryOptions{Clock: newFakeClock().Now})
		reserve(t, m)
		b := reserve(t, m) // slot +10s
		_ = m.Cancel(ctx, "k", b)
		if got := pending(t, m); got != iv {
			t.Fatalf("pending after cancelling the last slot = %v, want %v", got, iv)
		}
		if c := reserve(t, m); c.Wait != iv {
			t.Fatalf("next request waits %v, want the cancelled slot %v", c.Wait, iv)
		}
	})
	t.Run("a slot with later reservations stays consumed", func(t *testing.T) {
		m := NewMemory(MemoryOptions{Clock: newFakeClock().Now})
		reserve(t, m)
		b := reserve(t, m)
		reserve(t, m) // +20s
		_ = m.Cancel(ctx, "k", b)
		if got := pending(t, m); got != 3*iv {
			t.Fatalf("pending = %v, want %v (nothing given back)", got, 3*iv)
		}
	})
	t.Run("rollbacks chain in reverse order", func(t *testing.T) {
		m := NewMemory(MemoryOptions{Clock: newFakeClock().Now})
		reserve(t, m)
		b, c := reserve(t, m), reserve(t, m)
		_ = m.Cancel(ctx, "k", c)
		_ = m.Cancel(ctx, "k", b)
		if got := pending(t, m); got != iv {
			t.Fatalf("pending = %v, want %v", got, iv)
		}
	})
	t.Run("cancel after a new reservation took the slot does nothing", func(t *testing.T) {
		m := NewMemory(MemoryOptions{Clock: newFakeClock().Now})
		reserve(t, m)
		b, c := reserve(t, m), reserve(t, m)
		_ = m.Cancel(ctx, "k", c) // next back to +20s
		reserve(t, m)             // takes c's slot: next +30s again
		_ = m.Cancel(ctx, "k", b) // b is not the last: nothing to give back
		if got := pending(t, m); got != 3*iv {
			t.Fatalf("pending = %v, want %v", got, 3*iv)
		}
	})
	t.Run("refused reservation", func(t *testing.T) {
		m := NewMemory(MemoryOptions{Clock: newFakeClock().Now})
		reserve(t, m)
		r, _ := m.Reserve(ctx, "k", iv, 0)
		_ = m.Cancel(ctx, "k", r)
		if got := pending(t, m); got != iv {
			t.Fatalf("pending = %v, want %v", got, iv)
		}
	})
}

func TestMemoryPending(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryOptions{Clock: clock.Now})
	ctx := context.Background()
	if d, _ := m.Pending(ctx, "k"); d != 0 {
		t.Fatalf("idle pending = %v", d)
	}
	_, _ = m.Reserve(ctx, "k", 10*time.Second, 0)
	clock.Advance(3 * time.Second)
	if d, _ := m.Pending(ctx, "k"); d != 7*time.Second {
		t.Fatalf("pending = %v, want 7s", d)
	}
	clock.Advance(time.Hour)
	if d, _ := m.Pending(ctx, "k"); d != 0 {
		t.Fatalf("pending after idle = %v", d)
	}
}

func TestMemoryIdleKeysExpire(t *testing.T) {
	ctx := context.Background()
	t.Run("Sweep", func(t *testing.T) {
		clock := newFakeClock()
		m := NewMemory(MemoryOptions{Clock: clock.Now})
		for i := range 1000 {
			_, _ = m.Reserve(ctx, "k"+strconv.Itoa(i), time.Second, 0)
		}
		clock.Advance(time.Second - 1)
		m.Sweep()
		if n := m.Len(); n != 1000 {
			t.Fatalf("keys still paced were dropped: %d left", n)
		}
		clock.Advance(1)
		m.Sweep()
		if n := m.Len(); n != 0 {
			t.Fatalf("%d idle keys left after Sweep", n)
		}
	})
	t.Run("shards sweep themselves when touched", func(t *testing.T) {
		clock := newFakeClock()
		m := NewMemory(MemoryOptions{Clock: clock.Now, SweepEvery: time.Second})
		const n = 10000
		for i := range n {
			_, _ = m.Reserve(ctx, "old"+strconv.Itoa(i), 100*time.Millisecond, 0)
		}
		clock.Advance(2 * time.Second)
		for i := range n {
			_, _ = m.Reserve(ctx, "new"+strconv.Itoa(i), 100*time.Millisecond, 0)
		}
		if got := m.Len(); got != n {
			t.Fatalf("Len = %d, want %d (the idle keys dropped)", got, n)
		}
	})
	t.Run("shrunken shards are rebuilt", func(t *testing.T) {
		clock := newFakeClock()
		m := NewMemory(MemoryOptions{Clock: clock.Now, Shards: 1})
		for i := range 4 * minRebuild {
			_, _ = m.Reserve(ctx, "k"+strconv.Itoa(i), time.Second, 0)
		}
		clock.Advance(2 * time.Second)
		_, _ = m.Reserve(ctx, "x", time.Second, 0)
		if s := &m.shards[0]; len(s.next) != 1 || s.peak != 1 {
			t.Fatalf("after sweep: len %d peak %d, want 1 1 (map rebuilt)", len(s.next), s.peak)
		}
	})
}
