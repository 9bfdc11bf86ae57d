package doccache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/internal/testclock"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// Admit is asked before each fetch, cold and Refetch alike: a refusal
// sends nothing and gives a failure that names it (an earlier document
// kept), reported to no OnAnswer; an admitted fetch's answer reaches done.
func TestAdmitIsAskedBeforeEveryFetch(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter) { fmt.Fprint(w, "hello") })
	clock := testclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	var refuse atomic.Bool
	var asked, answered, reported atomic.Int64
	c := newCache(t, s, false, Config[*result]{Now: clock.Now,
		OnAnswer: func(Answer[*result]) { reported.Add(1) },
		Admit: func(ctx context.Context, loc Location) (func(*resolver.FileAnswer), error) {
			asked.Add(1)
			if loc.Origin != s.origin || loc.Target != "/a" {
				t.Errorf("Admit asked for %v %s", loc.Origin, loc.Target)
			}
			if refuse.Load() {
				return nil, errors.New("robots.txt says no")
			}
			return func(a *resolver.FileAnswer) {
				if a.HTTPStatus == http.StatusOK {
					answered.Add(1)
				}
			}, nil
		}}, resolver.Config{})
	refuse.Store(true)
	r, err := c.Lookup(context.Background(), "/a")
	var nf *NotFetchedError
	if err != nil || r.Doc != nil || !errors.As(r.Err, &nf) || s.hitsOf("/a") != 0 || reported.Load() != 0 {
		t.Fatalf("refused: %+v, %v; server hit %d times, OnAnswer %d times", r, err, s.hitsOf("/a"), reported.Load())
	}
	refuse.Store(false)
	clock.Advance(r.Expires.Sub(clock.Now())) // the refusal is retried once its backoff is over
	if r, _ := c.Lookup(context.Background(), "/a"); r.Doc == nil || s.hitsOf("/a") != 1 || answered.Load() != 1 {
		t.Fatalf("admitted: %+v; server hit %d times, done told %d times", r, s.hitsOf("/a"), answered.Load())
	}
	refuse.Store(true)
	if r := c.Refetch("/a"); r.Doc == nil || !r.Stale || !errors.As(r.Err, &nf) || s.hitsOf("/a") != 1 {
		t.Errorf("a refused Refetch: %+v, server hit %d times: want the earlier document, stale, nothing sent", r, s.hitsOf("/a"))
	}
	if asked.Load() != 3 {
		t.Errorf("Admit asked %d times, want 3 (cold, retry, Refetch)", asked.Load())
	}
}

// Miss is asked with the caller's context on a lookup that would fetch,
// never on a hit: its refusal gives that caller a failure, fetches and
// caches nothing.
func TestMissRefusesAFetchForOneCaller(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter) { fmt.Fprint(w, "hello") })
	type budget struct{}
	var missed atomic.Int64
	c := newCache(t, s, false, Config[*result]{Miss: func(ctx context.Context, loc Location) error {
		missed.Add(1)
		if ctx.Value(budget{}) != nil {
			return errors.New("over budget")
		}
		return nil
	}}, resolver.Config{})
	over := context.WithValue(context.Background(), budget{}, true)
	var nf *NotFetchedError
	if r, _ := c.Lookup(over, "/a"); r.Doc != nil || !errors.As(r.Err, &nf) || s.hitsOf("/a") != 0 {
		t.Fatalf("over budget: %+v, server hit %d times", r, s.hitsOf("/a"))
	}
	if r, _ := c.Lookup(context.Background(), "/a"); r.Doc == nil || s.hitsOf("/a") != 1 {
		t.Fatalf("within budget: %+v (the refusal was cached?), server hit %d times", r, s.hitsOf("/a"))
	}
	if r, _ := c.Lookup(over, "/a"); r.Doc == nil || missed.Load() != 2 {
		t.Errorf("a hit over budget: %+v, Miss asked %d times: want the cached document, Miss not asked", r, missed.Load())
	}
}
