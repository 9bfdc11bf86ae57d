package tdmcache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/internal/testclock"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/tdmrep"
)

const reserveAll = `[{"location":"/","tdm-reservation":1,"tdm-policy":"https://example.com/policy"}]`

// testOrigin serves tdmrep.json with what answer says (changeable) and
// counts the requests for it.
type testOrigin struct {
	*httptest.Server
	origin origin.Origin
	hits   atomic.Int64
	mu     sync.Mutex
	answer func(w http.ResponseWriter)
}

func (o *testOrigin) set(answer func(w http.ResponseWriter)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.answer = answer
}

func status(code int, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func body(s string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		status(200, header...)(w)
		fmt.Fprint(w, s)
	}
}

func startOrigin(t *testing.T, answer func(w http.ResponseWriter)) *testOrigin {
	t.Helper()
	o := &testOrigin{answer: answer}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != tdmrep.Path {
			http.NotFound(w, r)
			return
		}
		o.hits.Add(1)
		o.mu.Lock()
		answer := o.answer
		o.mu.Unlock()
		answer(w)
	}))
	o.Server.Listener.Close()
	o.Server.Listener = ln
	o.Start()
	t.Cleanup(o.Close)
	if o.origin, err = origin.Parse(o.URL); err != nil {
		t.Fatal(err)
	}
	return o
}

func newCache(t *testing.T, cfg Config, rc resolver.Config) *Cache {
	t.Helper()
	guard := &egress.Guard{BlockPrivate: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	rc.DialContext, rc.FetchTimeout, rc.Now = guard.DialContext, 2*time.Second, cfg.Now
	r, err := resolver.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	cfg.Resolver = r
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func lookup(t *testing.T, c *Cache, o origin.Origin) *Result {
	t.Helper()
	res, err := c.Lookup(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestStatusClasses: 2xx is a file, other 4xx no file (no reservation),
// 429, 5xx and network failures unknown.
func TestStatusClasses(t *testing.T) {
	tests := []struct {
		name     string
		answer   func(w http.ResponseWriter)
		status   resolver.Status
		reserved bool
		unknown  bool
		cause    string
	}{
		{"200 with a reservation", body(reserveAll), resolver.OK, true, false, ""},
		{"200 that is not JSON: no reservation", body("<html>not found</html>"), resolver.OK, false, false, ""},
		{"404: no reservation", status(404), resolver.Unavailable, false, false, ""},
		{"410: no reservation", status(410), resolver.Unavailable, false, false, ""},
		{"401: no reservation", status(401), resolver.Unavailable, false, false, ""},
		{"429: unknown", status(429), resolver.Unreachable, false, true, resolver.CauseHTTP429},
		{"500: unknown", status(500), resolver.Unreachable, false, true, resolver.CauseHTTP5xx},
		{"503: unknown", status(503), resolver.Unreachable, false, true, resolver.CauseHTTP5xx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := startOrigin(t, tt.answer)
			res := lookup(t, newCache(t, Config{}, resolver.Config{}), o.origin)
			if res.Status != tt.status || res.Match("/a").Reserved() != tt.reserved || res.Unknown() != tt.unknown || res.Cause() != tt.cause {
				t.Errorf("status %v reserved %v unknown %v cause %q, want %v %v %v %q (err %v)",
					res.Status, res.Match("/a").Reserved(), res.Unknown(), res.Cause(), tt.status, tt.reserved, tt.unknown, tt.cause, res.Err)
			}
			if res.Origin != o.origin || res.URL != o.URL+tdmrep.Path {
				t.Errorf("origin %v URL %q", res.Origin, res.URL)
			}
		})
	}
}

func TestNetworkFailureIsUnknown(t *testing.T) {
	c := newCache(t, Config{}, resolver.Config{})
	res := lookup(t, c, origin.Origin{Scheme: "http", Host: "127.0.0.1", Port: 9}) // refused by the egress guard
	var denied *egress.DeniedError
	if !res.Unknown() || !errors.As(res.Err, &denied) || res.Cause() != egress.CauseDenied {
		t.Errorf("unknown %v err %v cause %q", res.Unknown(), res.Err, res.Cause())
	}
}

// TestColdOriginIsFetchedOnce: concurrent lookups of a cold origin share
// one fetch, and later ones are answered from the cache.
func TestColdOriginIsFetchedOnce(t *testing.T) {
	release := make(chan struct{})
	o := startOrigin(t, func(w http.ResponseWriter) {
		<-release
		fmt.Fprint(w, reserveAll)
	})
	c := newCache(t, Config{}, resolver.Config{})
	var wg sync.WaitGroup
	results := make([]*Result, 20)
	for i := range results {
		wg.Go(func() { results[i], _ = c.Lookup(context.Background(), o.origin) })
	}
	for c.Stats().Misses < uint64(len(results)) {
		time.Sleep(time.Millisecond) // until every lookup waits for the fetch
	}
	close(release)
	wg.Wait()
	for _, r := range results {
		if r != results[0] || !r.Match("/").Reserved() {
			t.Fatalf("results differ or not reserved: %+v", r)
		}
	}
	lookup(t, c, o.origin)
	if n := o.hits.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
	if s := c.Stats(); s.Hits != 1 || s.Entries != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestFreshness: max-age is kept within robots.txt's min and max TTL; an
// expired file keeps serving while it is refreshed; a failure is retried
// after the backoff and, with an earlier file, that file stands (Stale).
func TestFreshness(t *testing.T) {
	clock := testclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	o := startOrigin(t, body(reserveAll, "Cache-Control", "max-age=5"))
	c := newCache(t, Config{Now: clock.Now}, resolver.Config{MinTTL: time.Minute, MaxTTL: time.Hour, RetryMin: 10 * time.Second, RetryMax: time.Minute})
	res := lookup(t, c, o.origin)
	if got := res.Expires.Sub(clock.Now()); got != time.Minute {
		t.Errorf("max-age=5 is fresh for %v, want robots.min_ttl's 1m", got)
	}
	clock.Advance(30 * time.Second)
	if lookup(t, c, o.origin) != res || o.hits.Load() != 1 {
		t.Fatal("a fresh file was fetched again")
	}

	o.set(status(503))
	clock.Advance(time.Minute)
	if got := lookup(t, c, o.origin); got != res {
		t.Fatal("an expired file did not keep serving during its refresh")
	}
	var stale *Result
	for stale == nil || !stale.Stale {
		stale = lookup(t, c, o.origin) // the background refresh lands
		time.Sleep(time.Millisecond)
	}
	if stale.File != res.File || !stale.Match("/x").Reserved() || stale.Unknown() || stale.Failures != 1 || stale.Cause() != resolver.CauseHTTP5xx {
		t.Errorf("the stale copy: %+v", stale)
	}
	if got := stale.Expires.Sub(clock.Now()); got != 10*time.Second {
		t.Errorf("next retry in %v, want robots.retry_min's 10s", got)
	}

	o.set(status(404, "Cache-Control", "max-age=86400"))
	clock.Advance(11 * time.Second)
	lookup(t, c, o.origin)
	var gone *Result
	for gone == nil || gone.Status != resolver.Unavailable {
		gone = lookup(t, c, o.origin)
		time.Sleep(time.Millisecond)
	}
	if gone.File != nil || gone.Match("/x").Reserved() || gone.Expires.Sub(clock.Now()) != time.Hour {
		t.Errorf("after a 404: %+v, fresh for %v (want robots.max_ttl's 1h)", gone, gone.Expires.Sub(clock.Now()))
	}
}

// TestUnknownIsRetriedWithBackoff: without an earlier file, a failure is
// remembered (no fetch per request) until its retry, which doubles.
func TestUnknownIsRetriedWithBackoff(t *testing.T) {
	clock := testclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	o := startOrigin(t, status(500))
	c := newCache(t, Config{Now: clock.Now}, resolver.Config{RetryMin: 10 * time.Second, RetryMax: time.Minute})
	res := lookup(t, c, o.origin)
	lookup(t, c, o.origin)
	if !res.Unknown() || o.hits.Load() != 1 {
		t.Fatalf("unknown %v, %d fetches", res.Unknown(), o.hits.Load())
	}
	clock.Advance(10 * time.Second)
	res = lookup(t, c, o.origin) // expired and not usable: waits for the retry
	if o.hits.Load() != 2 || res.Failures != 2 || res.Expires.Sub(clock.Now()) != 20*time.Second {
		t.Errorf("%d fetches, failures %d, next retry in %v", o.hits.Load(), res.Failures, res.Expires.Sub(clock.Now()))
	}
	o.set(body(`[]`))
	clock.Advance(20 * time.Second)
	if res = lookup(t, c, o.origin); res.Unknown() || res.File == nil || res.Failures != 0 {
		t.Errorf("after recovery: %+v", res)
	}
}

// TestOnAnswer: every fetch is reported with its body, and files keep its
// SHA-256.
func TestOnAnswer(t *testing.T) {
	o := startOrigin(t, body(reserveAll, "ETag", `"v1"`))
	var mu sync.Mutex
	var answers []Answer
	c := newCache(t, Config{OnAnswer: func(a Answer) {
		mu.Lock()
		defer mu.Unlock()
		answers = append(answers, a)
	}}, resolver.Config{})
	res := lookup(t, c, o.origin)
	mu.Lock()
	defer mu.Unlock()
	if len(answers) != 1 {
		t.Fatalf("%d answers", len(answers))
	}
	a := answers[0]
	if a.Result != res || string(a.Body) != reserveAll || a.HTTPStatus != 200 || a.Header.Get("ETag") != `"v1"` ||
		a.FetchedURL != o.URL+tdmrep.Path || a.FinalURL != a.FetchedURL {
		t.Errorf("answer %+v", a)
	}
	if res.SHA256 == "" || len(res.SHA256) != 64 {
		t.Errorf("SHA256 %q", res.SHA256)
	}
}

// TestCallerGivingUp: a caller's cancelled context ends its wait, not the
// fetch, whose result the next caller gets.
func TestCallerGivingUp(t *testing.T) {
	release := make(chan struct{})
	o := startOrigin(t, func(w http.ResponseWriter) {
		<-release
		fmt.Fprint(w, reserveAll)
	})
	c := newCache(t, Config{}, resolver.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Lookup(ctx, o.origin)
		done <- err
	}()
	for c.Stats().Misses == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	close(release)
	if res := lookup(t, c, o.origin); !res.Match("/").Reserved() || o.hits.Load() != 1 {
		t.Errorf("after the wait: %+v, %d fetches", res, o.hits.Load())
	}
}

// mapStore is a resolver.Store in a map, as Redis keeps it for a fleet.
type mapStore struct {
	mu   sync.Mutex
	recs map[origin.Origin]resolver.Record
}

func (s *mapStore) Load(_ context.Context, o origin.Origin) (resolver.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[o]
	return rec, ok, nil
}

func (s *mapStore) Save(_ context.Context, o origin.Origin, rec resolver.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[o] = rec
	return nil
}

// TestStoreSharesFilesNotFailures: a file one cache fetched serves another
// cache on the same store without a fetch (announced as Shared); an
// unreachable file is not shared, each cache asks the origin itself.
func TestStoreSharesFilesNotFailures(t *testing.T) {
	store := &mapStore{recs: map[origin.Origin]resolver.Record{}}
	var shared atomic.Int64
	onAnswer := func(a Answer) {
		if a.Shared {
			shared.Add(1)
		}
	}
	a := newCache(t, Config{Store: store, OnAnswer: onAnswer}, resolver.Config{})
	b := newCache(t, Config{Store: store, OnAnswer: onAnswer}, resolver.Config{})

	o := startOrigin(t, body(reserveAll))
	if res := lookup(t, a, o.origin); !res.Match("/x").Reserved() {
		t.Fatalf("first cache: %+v", res)
	}
	res := lookup(t, b, o.origin)
	if !res.Match("/x").Reserved() || res.SHA256 == "" || o.hits.Load() != 1 || shared.Load() != 1 {
		t.Errorf("second cache: reserved %t, sha256 %q; the origin asked %d times (want 1), %d shared answers (want 1)",
			res.Match("/x").Reserved(), res.SHA256, o.hits.Load(), shared.Load())
	}

	down := startOrigin(t, status(503))
	if !lookup(t, a, down.origin).Unknown() || !lookup(t, b, down.origin).Unknown() || down.hits.Load() != 2 {
		t.Errorf("an unreachable file: asked %d times by two caches, want 2 (failures are not shared)", down.hits.Load())
	}
}
