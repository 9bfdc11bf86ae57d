package pacing

import (
	"github.com/robotsgate/robotsgate/internal/redistest"

	"context"
	"errors"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// newRedisStore returns a Redis store on srv, closed in cleanup.
func newRedisStore(t testing.TB, srv *redistest.Server) *Redis {
	t.Helper()
	r, err := NewRedis(RedisOptions{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// rawClient is a plain client to look at what the store wrote.
func rawClient(t testing.TB, srv *redistest.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// between fails unless lo <= d <= hi.
func between(t *testing.T, what string, d, lo, hi time.Duration) {
	t.Helper()
	if d < lo || d > hi {
		t.Errorf("%s = %v, want in [%v, %v]", what, d, lo, hi)
	}
}

// elapsedSlack is how much Redis' clock may move between two calls of a
// test (generous for a loaded machine).
const elapsedSlack = 300 * time.Millisecond

func TestRedisReservationArithmetic(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	r := newRedisStore(t, srv)
	raw := rawClient(t, srv)
	ctx := context.Background()
	const iv = 10 * time.Second

	first, err := r.Reserve(ctx, "k", iv, time.Minute)
	if err != nil || !first.Granted || first.Wait != 0 {
		t.Fatalf("first: %+v, %v; want granted without wait", first, err)
	}
	second, _ := r.Reserve(ctx, "k", iv, time.Minute)
	if !second.Granted {
		t.Fatalf("second refused: %+v", second)
	}
	between(t, "second wait", second.Wait, iv-elapsedSlack, iv)

	value, err := raw.Get(ctx, DefaultRedisKeyPrefix+"{k}").Result()
	if err != nil || !regexp.MustCompile(`^[0-9]{16}$`).MatchString(value) {
		t.Errorf("stored next %q (%v), want integer microseconds", value, err)
	}

	// Refused: slot 20s ahead, maxWait 15s. Nothing reserved.
	refused, _ := r.Reserve(ctx, "k", iv, 15*time.Second)
	if refused.Granted {
		t.Fatalf("third granted: %+v", refused)
	}
	between(t, "refused wait", refused.Wait, 2*iv-elapsedSlack, 2*iv)
	if got := refused.RetryAfter; got != refused.Wait-15*time.Second {
		t.Errorf("RetryAfter %v, want wait - maxWait = %v", got, refused.Wait-15*time.Second)
	}
	if after, _ := raw.Get(ctx, DefaultRedisKeyPrefix+"{k}").Result(); after != value {
		t.Errorf("refusal changed next: %s -> %s", value, after)
	}
	third, _ := r.Reserve(ctx, "k", iv, time.Minute)
	between(t, "wait after refusal", third.Wait, 2*iv-elapsedSlack, 2*iv)

	// Another key is independent.
	other, _ := r.Reserve(ctx, "other", iv, 0)
	if !other.Granted || other.Wait != 0 {
		t.Errorf("other key: %+v", other)
	}
	pending, _ := r.Pending(ctx, "k")
	between(t, "pending", pending, 3*iv-elapsedSlack, 3*iv)
}

func TestRedisCancel(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	r := newRedisStore(t, srv)
	ctx := context.Background()
	const iv = 10 * time.Second

	_, _ = r.Reserve(ctx, "k", iv, time.Hour)
	b, _ := r.Reserve(ctx, "k", iv, time.Hour)
	c, _ := r.Reserve(ctx, "k", iv, time.Hour)
	if err := r.Cancel(ctx, "k", b); err != nil {
		t.Fatal(err)
	}
	p, _ := r.Pending(ctx, "k")
	between(t, "pending after cancelling a middle slot", p, 3*iv-elapsedSlack, 3*iv)
	_ = r.Cancel(ctx, "k", c)
	p, _ = r.Pending(ctx, "k")
	between(t, "pending after cancelling the last slot", p, 2*iv-elapsedSlack, 2*iv)
	d, _ := r.Reserve(ctx, "k", iv, time.Hour)
	between(t, "wait of the request after", d.Wait, 2*iv-elapsedSlack, 2*iv)
}

func TestRedisIdleKeysExpire(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	r := newRedisStore(t, srv)
	raw := rawClient(t, srv)
	ctx := context.Background()
	key := DefaultRedisKeyPrefix + "{k}"

	_, _ = r.Reserve(ctx, "k", 10*time.Second, 0)
	ttl, err := raw.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	between(t, "PTTL", ttl, 10*time.Second-elapsedSlack, 10*time.Second+2*time.Millisecond)

	_, _ = r.Reserve(ctx, "short", 50*time.Millisecond, 0)
	deadline := time.Now().Add(5 * time.Second)
	for raw.Exists(ctx, DefaultRedisKeyPrefix+"{short}").Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle key did not expire")
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	if res, _ := r.Reserve(ctx, "short", 50*time.Millisecond, 0); !res.Granted || res.Wait != 0 {
		t.Errorf("after expiry: %+v, want an immediate slot", res)
	}
}

// TestRedisFleet: three proxies (separate clients and pacers) on one Redis,
// nine requests spread over them: the slots Redis hands out are the padded
// interval apart and no closer than the schedule needs, and no request
// leaves before its slot.
//
// What a fleet shares is the slots; the moments requests leave are each
// process's. A request let go late (its goroutine not run at once on a
// loaded machine) leaves closer to the next one, which its own process
// would hold back (the gate) but another cannot: the test measured such
// gaps of 108 ms for an interval of 200 ms while the slots were right. So
// the spacing is checked on the slots, exactly (Redis's microseconds), and
// each start against its own slot.
func TestRedisFleet(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	const interval = 200 * time.Millisecond
	stores := make([]*slotStore, 3)
	pacers := make([]*Pacer, 3)
	for i := range pacers {
		stores[i] = &slotStore{Store: newRedisStore(t, srv)}
		pacers[i] = New(Options{Store: stores[i], MaxWait: time.Minute})
	}
	type request struct {
		slot  time.Time // Redis's clock, microseconds since the Unix epoch
		wait  time.Duration
		start time.Time // wall clock, comparable with slot
	}
	var mu sync.Mutex
	var reqs []request
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Go(func() {
			ctx := context.WithValue(context.Background(), requestKey{}, i)
			permit, err := pacers[i%3].Acquire(ctx, Request{Key: "origin", Interval: interval})
			now := time.Now().Round(0) // the wall clock, as Redis's TIME
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			permit.Release()
			r := stores[i%3].reservation(t, i)
			mu.Lock()
			reqs = append(reqs, request{slot: time.UnixMicro(r.slot), wait: r.Wait, start: now})
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(reqs) != 9 {
		t.Fatalf("%d requests let through, want 9", len(reqs))
	}
	slices.SortFunc(reqs, func(a, b request) int { return a.slot.Compare(b.slot) })
	padded := interval + DefaultPadding
	for i, r := range reqs {
		if r.start.Before(r.slot) {
			t.Errorf("request with slot %d let go %v before its slot", i, r.slot.Sub(r.start))
		}
		if late := r.start.Sub(r.slot); late > totalSlack {
			t.Errorf("request with slot %d let go %v after its slot", i, late)
		}
		if i == 0 {
			continue
		}
		// slot = max(now, next): the previous slot plus the padded
		// interval, or now when that has passed (no wait).
		if gap := r.slot.Sub(reqs[i-1].slot); gap < padded || gap > padded && r.wait != 0 {
			t.Errorf("slots %d and %d are %v apart (wait %v), want %v, or more with no wait", i-1, i, gap, r.wait, padded)
		}
	}
}

// requestKey numbers a test's requests in their contexts, for slotStore.
type requestKey struct{}

// slotStore records the reservation of each numbered request
// (requestKey), whose slot it reads: what a test checks spacing on
// exactly, whenever the requests' goroutines run; and how long the store
// took to answer it.
type slotStore struct {
	Store
	mu   sync.Mutex
	made map[int]Reservation
	took map[int]time.Duration
}

func (s *slotStore) Reserve(ctx context.Context, key string, interval, maxWait time.Duration) (Reservation, error) {
	begin := time.Now()
	r, err := s.Store.Reserve(ctx, key, interval, maxWait)
	if n, ok := ctx.Value(requestKey{}).(int); ok && err == nil {
		s.mu.Lock()
		if s.made == nil {
			s.made, s.took = map[int]Reservation{}, map[int]time.Duration{}
		}
		s.made[n], s.took[n] = r, time.Since(begin)
		s.mu.Unlock()
	}
	return r, err
}

// reservation is request n's.
func (s *slotStore) reservation(t *testing.T, n int) Reservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.made[n]
	if !ok || !r.Granted {
		t.Errorf("request %d: reservation %+v", n, r)
	}
	return r
}

// failFast bounds how long a call on a dead or frozen Redis may take.
const failFast = 2 * time.Second

// reserveFails checks that a reservation fails with an *UnavailableError
// within failFast.
func reserveFails(t *testing.T, s Store) {
	t.Helper()
	start := time.Now()
	_, err := s.Reserve(context.Background(), "k", time.Second, time.Minute)
	took := time.Since(start)
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want an *UnavailableError", err)
	}
	if took > failFast {
		t.Errorf("failing took %v, want < %v", took, failFast)
	}
}

// waitWorks polls until a reservation on s succeeds (bounded).
func waitWorks(t *testing.T, s Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Reserve(context.Background(), "recovery", time.Millisecond, time.Minute)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("store did not recover: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

func TestRedisKilledAndRestarted(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	r := newRedisStore(t, srv)
	ctx := context.Background()
	if _, err := r.Reserve(ctx, "k", time.Second, time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	reserveFails(t, r)
	reserveFails(t, r)
	if err := r.Healthy(ctx); err == nil {
		t.Error("Healthy on a dead Redis")
	}
	srv.Restart()
	waitWorks(t, r) // the same store, not re-created
	if err := r.Healthy(ctx); err != nil {
		t.Errorf("Healthy after restart: %v", err)
	}
}

func TestRedisFrozen(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	r := newRedisStore(t, srv)
	ctx := context.Background()
	if _, err := r.Reserve(ctx, "k", time.Second, time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	reserveFails(t, r)
	start := time.Now()
	if err := r.Healthy(ctx); err == nil || time.Since(start) > failFast {
		t.Errorf("Healthy on a frozen Redis: %v after %v", err, time.Since(start))
	}
	srv.Thaw()
	waitWorks(t, r)
}

func TestRedisCallerContext(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	// The store's own timeouts are far longer than the bound below, so
	// only the caller's deadline can end the call in time.
	r, err := NewRedis(RedisOptions{Addr: srv.Addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute, OpTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	waitWorks(t, r) // connected before the freeze: the call is cut while waiting for a reply
	srv.Freeze()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r.Reserve(ctx, "k", time.Second, time.Minute)
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("got %v after %v, want an error soon after the caller's deadline", err, time.Since(start))
	}
}

func TestNewRedisNeedsAddress(t *testing.T) {
	if _, err := NewRedis(RedisOptions{}); err == nil {
		t.Fatal("no error without an address")
	}
}
