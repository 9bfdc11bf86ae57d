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
	"github.com/robotsgate/robotsgate/internal/testclock"
	"github.com/robotsgate/robotsgate/internal/testorigin"
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

func tdmStatus(code int, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func tdmBody(s string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		tdmStatus(200, header...)(w)
		fmt.Fprint(w, s)
	}
}

func startOrigin(t *testing.T, answer func(w http.ResponseWriter)) *testOrigin {
	t.Helper()
	o := &testOrigin{answer: answer}
	o.Server = testorigin.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	var err error
	if o.origin, err = origin.Parse(o.URL); err != nil {
		t.Fatal(err)
	}
	return o
}

func newTDMRepCache(t *testing.T, cfg TDMRepConfig, rc resolver.Config) *TDMRepCache {
	t.Helper()
	rc.Now = cfg.Now
	cfg.Resolver = testorigin.Resolver(t, rc)
	c, err := NewTDMRep(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func lookup(t *testing.T, c *TDMRepCache, o origin.Origin) *TDMRepResult {
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
		{"200 with a reservation", tdmBody(reserveAll), resolver.OK, true, false, ""},
		{"200 that is not JSON: no reservation", tdmBody("<html>not found</html>"), resolver.OK, false, false, ""},
		{"404: no reservation", tdmStatus(404), resolver.Unavailable, false, false, ""},
		{"410: no reservation", tdmStatus(410), resolver.Unavailable, false, false, ""},
		{"401: no reservation", tdmStatus(401), resolver.Unavailable, false, false, ""},
		{"429: unknown", tdmStatus(429), resolver.Unreachable, false, true, resolver.CauseHTTP429},
		{"500: unknown", tdmStatus(500), resolver.Unreachable, false, true, resolver.CauseHTTP5xx},
		{"503: unknown", tdmStatus(503), resolver.Unreachable, false, true, resolver.CauseHTTP5xx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := startOrigin(t, tt.answer)
			res := lookup(t, newTDMRepCache(t, TDMRepConfig{}, resolver.Config{}), o.origin)
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
	c := newTDMRepCache(t, TDMRepConfig{}, resolver.Config{})
	res := lookup(t, c, origin.Origin{Scheme: "http", Host: "127.0.0.1", Port: 9}) // refused by the egress guard
	var denied *egress.DeniedError
	if !res.Unknown() || !errors.As(res.Err, &denied) || res.Cause() != egress.CauseDenied {
		t.Errorf("unknown %v err %v cause %q", res.Unknown(), res.Err, res.Cause())
	}
}

// TestFreshness: max-age is kept within robots.txt's min and max TTL; an
// expired file keeps serving while it is refreshed; a failure is retried
// after the backoff and, with an earlier file, that file stands (Stale).
func TestFreshness(t *testing.T) {
	clock := testclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	o := startOrigin(t, tdmBody(reserveAll, "Cache-Control", "max-age=5"))
	c := newTDMRepCache(t, TDMRepConfig{Now: clock.Now}, resolver.Config{MinTTL: time.Minute, MaxTTL: time.Hour, RetryMin: 10 * time.Second, RetryMax: time.Minute})
	res := lookup(t, c, o.origin)
	if got := res.Expires.Sub(clock.Now()); got != time.Minute {
		t.Errorf("max-age=5 is fresh for %v, want robots.min_ttl's 1m", got)
	}
	clock.Advance(30 * time.Second)
	if lookup(t, c, o.origin) != res || o.hits.Load() != 1 {
		t.Fatal("a fresh file was fetched again")
	}

	o.set(tdmStatus(503))
	clock.Advance(time.Minute)
	if got := lookup(t, c, o.origin); got != res {
		t.Fatal("an expired file did not keep serving during its refresh")
	}
	var stale *TDMRepResult
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

	o.set(tdmStatus(404, "Cache-Control", "max-age=86400"))
	clock.Advance(11 * time.Second)
	lookup(t, c, o.origin)
	var gone *TDMRepResult
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
	o := startOrigin(t, tdmStatus(500))
	c := newTDMRepCache(t, TDMRepConfig{Now: clock.Now}, resolver.Config{RetryMin: 10 * time.Second, RetryMax: time.Minute})
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
	o.set(tdmBody(`[]`))
	clock.Advance(20 * time.Second)
	if res = lookup(t, c, o.origin); res.Unknown() || res.File == nil || res.Failures != 0 {
		t.Errorf("after recovery: %+v", res)
	}
}

// TestOnAnswer: every fetch is reported with its body, and files keep its
// SHA-256.
func TestOnAnswer(t *testing.T) {
	o := startOrigin(t, tdmBody(reserveAll, "ETag", `"v1"`))
	var mu sync.Mutex
	var answers []TDMRepAnswer
	c := newTDMRepCache(t, TDMRepConfig{OnAnswer: func(a TDMRepAnswer) {
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
