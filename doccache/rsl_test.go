package doccache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/internal/testorigin"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

const licence = `<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license><prohibits type="usage">ai-train</prohibits></license></content></rsl>`

// testServer serves RSL documents at any path, with what answer says
// (changeable), counting the requests per path.
type testServer struct {
	*httptest.Server
	mu     sync.Mutex
	answer func(w http.ResponseWriter)
	hits   map[string]int
}

func (s *testServer) set(answer func(w http.ResponseWriter)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = answer
}

func (s *testServer) hitsOf(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func rslStatus(code int) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { w.WriteHeader(code) }
}

func rslBody(s string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/rsl+xml")
		fmt.Fprint(w, s)
	}
}

func startServer(t *testing.T, answer func(w http.ResponseWriter)) *testServer {
	t.Helper()
	s := &testServer{answer: answer, hits: map[string]int{}}
	s.Server = testorigin.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.RequestURI()]++
		answer := s.answer
		s.mu.Unlock()
		answer(w)
	}))
	return s
}

func newRSLCache(t *testing.T, cfg RSLConfig) *RSLCache {
	t.Helper()
	cfg.Resolver = testorigin.Resolver(t, resolver.Config{Now: cfg.Now})
	c, err := NewRSL(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestAnswersWithoutADocumentAreUnknown: only a 2xx holding a valid RSL
// document gives a document; a 4xx, a 5xx, or a body that is not RSL
// leaves the licence unknown, with the cause named.
func TestAnswersWithoutADocumentAreUnknown(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(w http.ResponseWriter)
		unknown bool
		cause   string
	}{
		{"200 with a licence", rslBody(licence), false, ""},
		{"200 that is HTML", rslBody("<html><body>Not here</body></html>"), true, "not an RSL document: rsl: line 1: the root element is <html> in namespace \"\", not <rsl> in \"https://rslstandard.org/rsl\""},
		{"404", rslStatus(404), true, "http_404"},
		{"401", rslStatus(401), true, "http_401"},
		{"503", rslStatus(503), true, resolver.CauseHTTP5xx},
		{"429", rslStatus(429), true, resolver.CauseHTTP429},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.answer)
			u := s.URL + "/licence.xml?v=1"
			res, err := newRSLCache(t, RSLConfig{}).Lookup(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			if res.Unknown() != tc.unknown || res.Cause() != tc.cause || res.URL != u {
				t.Fatalf("unknown %v cause %q URL %q, want %v %q (err %v)", res.Unknown(), res.Cause(), res.URL, tc.unknown, tc.cause, res.Err)
			}
			if s.hitsOf("/licence.xml?v=1") != 1 {
				t.Fatalf("the document was asked for at %v", s.hits)
			}
		})
	}
}

// TestEgressGuardApplies: a document on an address the egress guard
// refuses is not fetched: unknown, the guard named.
func TestEgressGuardApplies(t *testing.T) {
	res, err := newRSLCache(t, RSLConfig{}).Lookup(context.Background(), "http://127.0.0.1:9/licence.xml")
	if err != nil {
		t.Fatal(err)
	}
	var denied *egress.DeniedError
	if !res.Unknown() || !errors.As(res.Err, &denied) || res.Cause() != egress.CauseDenied {
		t.Fatalf("unknown %v err %v cause %q", res.Unknown(), res.Err, res.Cause())
	}
}

// TestNotHTTP: a URL that is not absolute http(s) is refused before any
// fetch.
func TestNotHTTP(t *testing.T) {
	c := newRSLCache(t, RSLConfig{})
	for _, u := range []string{"/licence.xml", "ftp://example.com/l.xml", "licence.xml", "http:///x"} {
		if _, err := c.Lookup(context.Background(), u); !errors.Is(err, ErrNotHTTP) {
			t.Errorf("%q: %v", u, err)
		}
	}
}

// TestUnreachableKeepsTheEarlierDocument: once expired, a failing fetch
// leaves the earlier document standing (Stale).
func TestUnreachableKeepsTheEarlierDocument(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := startServer(t, rslBody(licence))
	c := newRSLCache(t, RSLConfig{Now: clock})
	u := s.URL + "/l.xml"
	first, err := c.Lookup(context.Background(), u)
	if err != nil || first.Unknown() {
		t.Fatal(first, err)
	}
	s.set(rslStatus(503))
	mu.Lock()
	now = first.Expires.Add(time.Second)
	mu.Unlock()
	c.Refetch(u)
	res, _ := c.rslDocs.Peek(u)
	if res == nil || !res.Stale || res.Doc != first.Doc || res.Failures != 1 {
		t.Fatalf("after a failure: %+v", res)
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

// TestStoreSharesDocumentsByURL: a document one cache fetched serves
// another cache on the same store without a fetch (announced as Shared),
// two documents of one origin are two records, and an unreadable document
// is not shared.
func TestStoreSharesDocumentsByURL(t *testing.T) {
	store := &mapStore{recs: map[origin.Origin]resolver.Record{}}
	var shared atomic.Int64
	onAnswer := func(a RSLAnswer) {
		if a.Shared {
			shared.Add(1)
		}
	}
	a, b := newRSLCache(t, RSLConfig{Store: store, OnAnswer: onAnswer}), newRSLCache(t, RSLConfig{Store: store, OnAnswer: onAnswer})
	s := startServer(t, rslBody(licence))
	for _, path := range []string{"/one.xml", "/two.xml"} {
		if res, err := a.Lookup(context.Background(), s.URL+path); err != nil || res.Unknown() {
			t.Fatalf("first cache, %s: %+v %v", path, res, err)
		}
		res, err := b.Lookup(context.Background(), s.URL+path)
		if err != nil || res.Unknown() || res.SHA256 == "" || s.hitsOf(path) != 1 {
			t.Errorf("second cache, %s: %+v %v; asked %d times, want 1", path, res, err, s.hitsOf(path))
		}
	}
	if shared.Load() != 2 || len(store.recs) != 2 {
		t.Errorf("%d shared answers, %d records; want 2 and 2", shared.Load(), len(store.recs))
	}
	s.set(rslStatus(503))
	for _, c := range []*RSLCache{a, b} {
		if res, _ := c.Lookup(context.Background(), s.URL+"/down.xml"); !res.Unknown() {
			t.Errorf("an unreadable document: %+v", res)
		}
	}
	if n := s.hitsOf("/down.xml"); n != 2 {
		t.Errorf("an unreadable document asked %d times by two caches, want 2 (failures are not shared)", n)
	}
}
