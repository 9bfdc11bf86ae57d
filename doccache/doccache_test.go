package doccache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/internal/testclock"
	"github.com/robotsgate/robotsgate/internal/testorigin"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// note is the document of the tests: its body, or no document for a body
// that says "not a note".
type note struct{ text string }

// result is what the tests' cache gives: what was fetched, by key.
type result struct {
	key string
	Fetched[note]
}

// server serves notes at any path with what answer says (changeable),
// counting the requests per path.
type server struct {
	*httptest.Server
	origin origin.Origin
	mu     sync.Mutex
	answer func(w http.ResponseWriter)
	hits   map[string]int
}

func (s *server) set(answer func(w http.ResponseWriter)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = answer
}

func (s *server) hitsOf(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func reply(code int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

func serve(t *testing.T, answer func(w http.ResponseWriter)) *server {
	t.Helper()
	s := &server{answer: answer, hits: map[string]int{}}
	s.Server = testorigin.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		answer := s.answer
		s.mu.Unlock()
		answer(w)
	}))
	var err error
	if s.origin, err = origin.Parse(s.URL); err != nil {
		t.Fatal(err)
	}
	return s
}

// noteKind keys notes by their path on s; each path is a record of its
// own in a shared store. absence: a 4xx is an answer.
func noteKind(s *server, absence bool) Kind[string, note, *result] {
	return Kind[string, note, *result]{
		What: "note", Accept: "text/plain", Entries: 100, Bytes: 1 << 20,
		Locate: func(path string) Location {
			key := origin.Origin{Scheme: "http", Host: strings.Trim(path, "/") + ".note.invalid", Port: 80}
			return Location{Origin: s.origin, Target: path, URL: s.origin.URL(path), StoreKey: key}
		},
		Parse: func(body []byte, _ bool) (*note, error) {
			if string(body) == "not a note" {
				return nil, errors.New("not a note")
			}
			return &note{string(body)}, nil
		},
		Size:            func(n *note) int64 { return 0 },
		AbsenceIsAnswer: absence,
		Result:          func(loc Location, f Fetched[note]) *result { return &result{loc.URL, f} },
	}
}

// newCache returns a cache of s's notes on a resolver for rc whose egress
// guard lets s through.
func newCache(t *testing.T, s *server, absence bool, cfg Config[*result], rc resolver.Config) *Cache[string, note, *result] {
	t.Helper()
	rc.Now = cfg.Now
	cfg.Resolver = testorigin.Resolver(t, rc)
	c, err := New(noteKind(s, absence), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestEachKeyIsFetchedOnce: concurrent lookups of a cold key share one
// fetch, later ones are answered from the cache, and another key is a
// document of its own; OnAnswer sees each fetch with its body, and the
// result keeps the body's SHA-256.
func TestEachKeyIsFetchedOnce(t *testing.T) {
	release := make(chan struct{})
	s := serve(t, func(w http.ResponseWriter) {
		<-release
		fmt.Fprint(w, "hello")
	})
	var answers atomic.Int64
	c := newCache(t, s, false, Config[*result]{OnAnswer: func(a Answer[*result]) {
		if len(a.Result.SHA256) != 64 || string(a.Body) != "hello" || a.FetchedURL != a.Result.key || a.Shared {
			t.Errorf("answer %+v", a)
		}
		answers.Add(1)
	}}, resolver.Config{})
	results := make([]*result, 10)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i], _ = c.Lookup(context.Background(), "/a") })
	}
	for c.Stats().Misses < uint64(len(results)) {
		time.Sleep(time.Millisecond) // until every lookup waits for the fetch
	}
	close(release)
	wg.Wait()
	for _, r := range results {
		if r != results[0] || r.Doc == nil || r.Doc.text != "hello" {
			t.Fatalf("results differ or have no document: %+v", r)
		}
	}
	if r, err := c.Lookup(context.Background(), "/a"); err != nil || r != results[0] {
		t.Fatalf("a fresh result was not answered from the cache: %+v %v", r, err)
	}
	if _, err := c.Lookup(context.Background(), "/b"); err != nil {
		t.Fatal(err)
	}
	if s.hitsOf("/a") != 1 || s.hitsOf("/b") != 1 || answers.Load() != 2 {
		t.Errorf("asked /a %d and /b %d times, %d answers; want 1, 1, 2", s.hitsOf("/a"), s.hitsOf("/b"), answers.Load())
	}
	if st := c.Stats(); st.Hits != 1 || st.Misses != 11 || st.Entries != 2 || st.Bytes <= 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestCallerGivingUp: a caller's cancelled context ends its wait, not the
// fetch, whose result the next caller gets.
func TestCallerGivingUp(t *testing.T) {
	release := make(chan struct{})
	s := serve(t, func(w http.ResponseWriter) {
		<-release
		fmt.Fprint(w, "hello")
	})
	c := newCache(t, s, false, Config[*result]{}, resolver.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Lookup(ctx, "/a")
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
	if res, err := c.Lookup(context.Background(), "/a"); err != nil || res.Doc == nil || s.hitsOf("/a") != 1 {
		t.Errorf("after the wait: %+v %v, %d fetches", res, err, s.hitsOf("/a"))
	}
}

// syncStore is a resolver.Store in a sync.Map, as Redis keeps it for a
// fleet.
type syncStore struct{ m sync.Map }

func (s *syncStore) Load(_ context.Context, o origin.Origin) (resolver.Record, bool, error) {
	rec, ok := s.m.Load(o)
	if !ok {
		return resolver.Record{}, false, nil
	}
	return rec.(resolver.Record), true, nil
}

func (s *syncStore) Save(_ context.Context, o origin.Origin, rec resolver.Record) error {
	s.m.Store(o, rec)
	return nil
}

// TestStoreSharesAnswersNotFailures: a document or a 4xx one cache
// fetched serves another cache on the same store without a fetch
// (announced as Shared); a failure is not stored, each cache asks the
// server itself.
func TestStoreSharesAnswersNotFailures(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter)
		status resolver.Status
		shared bool
	}{
		{"a document", reply(200, "hello"), resolver.OK, true},
		{"a 404", reply(404, ""), resolver.Unavailable, true},
		{"a 503", reply(503, ""), resolver.Unreachable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, tt.answer)
			store := &syncStore{}
			var shared atomic.Int64
			cfg := Config[*result]{Store: store, OnAnswer: func(a Answer[*result]) {
				if a.Shared {
					shared.Add(1)
				}
			}}
			a, b := newCache(t, s, false, cfg, resolver.Config{}), newCache(t, s, false, cfg, resolver.Config{})
			for _, c := range []*Cache[string, note, *result]{a, b} {
				if res, err := c.Lookup(context.Background(), "/n"); err != nil || res.Status != tt.status {
					t.Fatalf("%+v %v, want status %v", res, err, tt.status)
				}
			}
			want, wantShared := 2, 0
			if tt.shared {
				want, wantShared = 1, 1
			}
			records := 0
			store.m.Range(func(any, any) bool { records++; return true })
			if s.hitsOf("/n") != want || int(shared.Load()) != wantShared || records != wantShared {
				t.Errorf("the server asked %d times, %d shared answers, %d records; want %d, %d, %d",
					s.hitsOf("/n"), shared.Load(), records, want, wantShared, wantShared)
			}
		})
	}
}

// TestExpiredEntries: once expired, a document keeps serving while one
// background refresh runs, and so does a 4xx where the Kind makes an
// absence an answer; otherwise the lookup waits for the fetch. A failure
// then keeps the earlier document (Stale) and is retried after the
// resolver's backoff.
func TestExpiredEntries(t *testing.T) {
	tests := []struct {
		name    string
		first   func(w http.ResponseWriter)
		absence bool
		serves  bool // the expired result answers the lookup
	}{
		{"a document", reply(200, "hello"), false, true},
		{"a 404 that is an answer", reply(404, ""), true, true},
		{"a 404 that is not", reply(404, ""), false, false},
		{"a body that is not a document", reply(200, "not a note"), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := testclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
			s := serve(t, tt.first)
			c := newCache(t, s, tt.absence, Config[*result]{Now: clock.Now}, resolver.Config{MinTTL: time.Minute, MaxTTL: time.Minute, RetryMin: 10 * time.Second})
			first, _ := c.Lookup(context.Background(), "/n")
			s.set(reply(503, ""))
			clock.Advance(2 * time.Minute)
			got, _ := c.Lookup(context.Background(), "/n")
			if (got == first) != tt.serves {
				t.Fatalf("the expired result answered: %v, want %v", got == first, tt.serves)
			}
			for got.Failures == 0 {
				got, _ = c.Lookup(context.Background(), "/n") // the background refresh lands
				time.Sleep(time.Millisecond)
			}
			if first.Doc != nil && (!got.Stale || got.Doc != first.Doc || got.Status != resolver.OK || got.HTTPStatus != 200) {
				t.Errorf("the earlier document does not stand: %+v", got)
			}
			if got.Failures != 1 || got.Expires.Sub(clock.Now()) != 10*time.Second || s.hitsOf("/n") != 2 {
				t.Errorf("failures %d, retry in %v, %d fetches; want 1, robots.retry_min's 10s, 2", got.Failures, got.Expires.Sub(clock.Now()), s.hitsOf("/n"))
			}
		})
	}
}
