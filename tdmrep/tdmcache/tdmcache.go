// Package tdmcache keeps each origin's /.well-known/tdmrep.json (package
// tdmrep) as robots.txt is kept. It does not judge: what a reservation
// means for a client is package policy's decision.
//
// Files are fetched with the robots.txt resolver's client and status
// classes (resolver.Resolver.FetchFile: egress guard, parent proxy, fetch
// timeout, 500 KiB), cached in a bounded LRU with
// robots.txt's freshness (Cache-Control max-age within the minimum and
// maximum TTL, failures remembered with the same backoff), one fetch per
// cold origin however many requests wait for it, an expired entry served
// while one background refresh runs, and an earlier file kept while the
// origin is unreachable.
//
// What an answer means: 2xx, a file (parsed, whatever it holds); 404, 410
// and other 4xx, no file (no reservation); 429, 5xx and network failures,
// unknown.
package tdmcache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/internal/sizedlru"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// accept is the Accept header of the fetches.
const accept = "application/json, */*;q=0.5"

// Config configures a Cache.
type Config struct {
	// Resolver fetches the files (FetchFile) and gives their freshness
	// (Freshness, RetryDelay): robots.txt's client and rules. Required.
	Resolver *resolver.Resolver
	// CacheEntries is how many origins the cache holds. Default 100000.
	CacheEntries int
	// CacheBytes bounds the memory the cached results keep, as their
	// parsed files measure it (tdmrep.File.Size). Default 64 MiB.
	CacheBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnAnswer, when set, is called after every fetch with what it
	// received (an archive's record), and every file keeps the SHA-256 of
	// its body (Result.SHA256). It runs on the fetch's goroutine: it must
	// not block.
	OnAnswer func(Answer)
	// Store, when set, shares fetched files between instances (a fleet),
	// as the robots.txt resolver's Store does: a cold origin is looked up
	// there before it is fetched, and a file (or a 4xx) fetched is saved
	// there until it expires. Failures are not shared: each instance
	// retries on its own schedule. A failing store only means a fetch.
	Store resolver.Store
}

// Result is what an origin's tdmrep.json says right now. Results are
// shared between requests and must not be modified; a refresh replaces
// the whole Result in the cache.
type Result struct {
	// File is the parsed file when Status is OK, possibly an earlier copy
	// kept while the origin is unreachable (Stale); nil otherwise.
	File *tdmrep.File
	// Status is OK (a file), Unavailable (4xx: no file, no reservation)
	// or Unreachable (429, 5xx, network: unknown).
	Status resolver.Status
	// HTTPStatus is the status of the answer the result rests on, 0 when
	// there was none.
	HTTPStatus int
	// Stale reports that File is an earlier copy, the latest fetch having
	// failed (Err says how).
	Stale bool
	// Origin is whose file it is; URL where it was read, after redirects.
	Origin origin.Origin
	URL    string
	// SHA256 names the body File was parsed from, when the cache archives
	// (Config.OnAnswer); "" otherwise.
	SHA256 string
	// FetchedAt is when the result was obtained (for a Stale one, the
	// copy's); Expires when it stops being fresh (for a failure, the next
	// retry).
	FetchedAt, Expires time.Time
	// Failures counts the fetches that failed in a row (0 after a success).
	Failures int
	// Err says why the latest fetch failed (Unreachable, Stale), else nil.
	Err error

	refreshing atomic.Bool // a background refresh is under way
}

// size is what r keeps on the heap, for the cache's byte bound.
func (r *Result) size() int64 {
	n := int64(unsafe.Sizeof(*r)) + int64(len(r.Origin.Host)+len(r.URL)+len(r.SHA256)) + r.File.Size()
	if r.Err != nil {
		n += int64(len(r.Err.Error()))
	}
	return n
}

// Unknown reports whether nothing is known of the origin's reservations:
// its tdmrep.json could not be fetched and no earlier copy stands in.
func (r *Result) Unknown() bool { return r.File == nil && r.Status == resolver.Unreachable }

// Match returns what the file says about target (tdmrep.File.Match):
// nothing when there is no file.
func (r *Result) Match(target string) tdmrep.Match { return r.File.Match(target) }

// Cause names why the latest fetch gave no file, as
// resolver.Result.Cause does (http_5xx, dns_error, ...); "" when it did.
func (r *Result) Cause() string { return resolver.CauseOf(r.Err) }

// usable reports whether the result may keep serving while it is
// refreshed in the background.
func (r *Result) usable() bool { return r.File != nil || r.Status == resolver.Unavailable }

// Answer is what one fetch received, for an archive (Config.OnAnswer).
type Answer struct {
	// Result is the verdict it gave (for a failure, possibly an earlier
	// copy marked Stale).
	Result *Result
	// Time is when the answer arrived.
	Time time.Time
	// FetchedURL is what was asked for; FinalURL where the answer came
	// from, after redirects.
	FetchedURL, FinalURL string
	// HTTPStatus is the final answer's status, 0 when there was none.
	HTTPStatus int
	// Header is the final answer's header, nil when there was none.
	Header http.Header
	// Body is the bytes parsed (2xx), at most tdmrep.MaxFileSize; nil
	// otherwise. Truncated: the answer was longer.
	Body      []byte
	Truncated bool
	// Shared: the answer came from the shared store (another instance
	// fetched it), not from the origin.
	Shared bool
}

// Cache keeps origins' tdmrep.json files. It is safe for concurrent use.
// Close stops background refreshes.
type Cache struct {
	cfg    Config
	cache  *sizedlru.Cache[origin.Origin, *Result]
	flight resolver.Flight[*Result]

	ctx       context.Context // parent of the fetches, cancelled by Close
	cancel    context.CancelFunc
	closeOnce sync.Once

	hits, misses atomic.Uint64
}

// Stats are the cache's counters.
type Stats struct {
	Hits, Misses uint64 // lookups answered at once, and not
	Entries      int    // origins cached now
	Bytes        int64  // the memory the cached results keep, as measured for the byte bound
}

// Stats returns the current counters.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: c.cache.Len(), Bytes: c.cache.Bytes()}
}

// New returns a Cache for cfg.
func New(cfg Config) (*Cache, error) {
	if cfg.Resolver == nil {
		return nil, errors.New("tdmcache: no resolver")
	}
	cfg.CacheEntries = cmp.Or(cfg.CacheEntries, 100000)
	cfg.CacheBytes = cmp.Or(cfg.CacheBytes, 64<<20)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cache, err := sizedlru.New[origin.Origin, *Result](cfg.CacheEntries, cfg.CacheBytes)
	if err != nil {
		return nil, fmt.Errorf("tdmcache: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{cfg: cfg, cache: cache, ctx: ctx, cancel: cancel}, nil
}

// Close cancels the fetches under way and waits for background refreshes
// to end. Calling it again does nothing.
func (c *Cache) Close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.flight.Close()
	})
}

// Lookup returns what o's tdmrep.json says. A fresh cached result is
// returned at once, an expired one that has a file (or none, 4xx) too
// while one background refresh runs; otherwise the caller waits for the
// one shared fetch of o, having passed ctx's cold gate
// (resolver.WithColdGate), and only ctx's cancellation ends that wait
// early (the fetch goes on for the others): it is then the only error,
// with resolver.ErrColdLimit when the gate gave no place in time.
func (c *Cache) Lookup(ctx context.Context, o origin.Origin) (*Result, error) {
	if res, ok := c.cache.Get(o); ok {
		if c.cfg.Now().Before(res.Expires) {
			c.hits.Add(1)
			return res, nil
		}
		if res.usable() {
			c.hits.Add(1)
			c.flight.Refresh(&res.refreshing, o.String(), func() *Result { return c.refresh(o) })
			return res, nil
		}
	}
	c.misses.Add(1)
	release, err := resolver.EnterCold(ctx)
	if err != nil {
		return nil, fmt.Errorf("tdmrep.json of %s: %w", o, err)
	}
	defer release()
	res, err := c.flight.Wait(ctx, o.String(), func() *Result { return c.refresh(o) })
	if err != nil {
		return nil, fmt.Errorf("tdmrep.json of %s: %w", o, err)
	}
	return res, nil
}

// refresh fetches o's file and caches the result. It runs detached from
// any request: one caller giving up must not fail the fetch for the
// others.
func (c *Cache) refresh(o origin.Origin) *Result {
	prev, _ := c.cache.Peek(o)
	if prev != nil && c.cfg.Now().Before(prev.Expires) {
		return prev // stored by the flight that just ended
	}
	if res, ok := c.fromStore(o); ok {
		c.cache.Add(o, res, res.size())
		return res
	}
	if c.cfg.Store != nil {
		rec, found, unlock := resolver.FetchOnce(c.ctx, c.cfg.Store, o, c.cfg.Now, c.cfg.Resolver.FetchTimeout()+time.Second, c.cfg.Resolver.Freshness(-1), "tdmrep.json")
		if found {
			res := c.fromRecord(o, rec)
			c.cache.Add(o, res, res.size())
			return res
		}
		defer unlock()
	}
	return c.fetch(o, prev)
}

// Refetch fetches o's tdmrep.json now, whatever the cache and the shared
// store hold (an operator's refresh), caches the result and shares it.
func (c *Cache) Refetch(o origin.Origin) *Result {
	prev, _ := c.cache.Peek(o)
	return c.fetch(o, prev)
}

// fetch fetches o's file, caches and shares the result and tells
// OnAnswer.
func (c *Cache) fetch(o origin.Origin, prev *Result) *Result {
	u := o.URL(tdmrep.Path)
	a := c.cfg.Resolver.FetchFile(c.ctx, o, tdmrep.Path, accept)
	now := c.cfg.Now()
	res := c.verdict(o, prev, &a, now)
	c.cache.Add(o, res, res.size())
	if !res.Stale && (res.Status == resolver.OK || res.Status == resolver.Unavailable) {
		c.toStore(o, res, a.Body)
	}
	if c.cfg.OnAnswer != nil {
		ans := Answer{Result: res, Time: now, FetchedURL: u, FinalURL: a.URL, HTTPStatus: a.HTTPStatus, Header: a.Header, Truncated: a.Truncated}
		if a.Status == resolver.OK {
			ans.Body = a.Body
		}
		c.cfg.OnAnswer(ans)
	}
	return res
}

// verdict turns one fetch into the Result to cache.
func (c *Cache) verdict(o origin.Origin, prev *Result, a *resolver.FileAnswer, now time.Time) *Result {
	r := c.cfg.Resolver
	res := &Result{Status: a.Status, HTTPStatus: a.HTTPStatus, Origin: o, URL: a.URL, FetchedAt: now, Err: a.Err}
	switch a.Status {
	case resolver.OK:
		res.File = tdmrep.Parse(a.Body)
		res.File.Truncated = res.File.Truncated || a.Truncated
		if c.cfg.OnAnswer != nil {
			res.SHA256 = archive.Sum(a.Body)
		}
		res.Expires = now.Add(r.Freshness(a.MaxAge))
	case resolver.Unavailable:
		res.Expires = now.Add(r.Freshness(a.MaxAge))
	default:
		res.Failures = 1
		if prev != nil {
			res.Failures = prev.Failures + 1
		}
		res.Expires = now.Add(r.RetryDelay(res.Failures, a.RetryAfter))
		if prev != nil && prev.File != nil {
			// As for robots.txt (RFC 9309 §2.4): while unreachable, the
			// earlier copy stands.
			res.File, res.Stale, res.Status, res.HTTPStatus = prev.File, true, resolver.OK, prev.HTTPStatus
			res.URL, res.SHA256, res.FetchedAt = prev.URL, prev.SHA256, prev.FetchedAt
		}
	}
	return res
}

// fromStore returns o's file as another instance fetched it, if the store
// holds a fresh one.
func (c *Cache) fromStore(o origin.Origin) (*Result, bool) {
	if c.cfg.Store == nil {
		return nil, false
	}
	// Freshness without max-age is the resolver's robots.max_ttl, the
	// longest freshness a stored file may have.
	rec, ok := resolver.LoadRecord(c.ctx, c.cfg.Store, o, c.cfg.Now(), c.cfg.Resolver.Freshness(-1), "tdmrep.json")
	if !ok {
		return nil, false
	}
	return c.fromRecord(o, rec), true
}

// fromRecord turns a record another instance stored into a Result.
func (c *Cache) fromRecord(o origin.Origin, rec resolver.Record) *Result {
	res := &Result{Status: rec.Status, HTTPStatus: rec.HTTPStatus, Origin: o, URL: rec.URL, FetchedAt: rec.FetchedAt, Expires: rec.Expires}
	if rec.Status == resolver.OK {
		res.File = tdmrep.Parse(rec.Body)
		res.File.Truncated = res.File.Truncated || rec.Truncated
		if c.cfg.OnAnswer != nil {
			res.SHA256 = archive.Sum(rec.Body)
		}
	}
	if c.cfg.OnAnswer != nil {
		c.cfg.OnAnswer(Answer{Result: res, Time: rec.FetchedAt, FetchedURL: o.URL(tdmrep.Path), FinalURL: rec.URL,
			HTTPStatus: rec.HTTPStatus, Body: rec.Body, Truncated: rec.Truncated, Shared: true})
	}
	return res
}

// toStore shares a fetched file (or its absence) with the other instances.
func (c *Cache) toStore(o origin.Origin, res *Result, body []byte) {
	if c.cfg.Store == nil {
		return
	}
	rec := resolver.Record{Status: res.Status, HTTPStatus: res.HTTPStatus, URL: res.URL, FetchedAt: res.FetchedAt, Expires: res.Expires}
	if res.Status == resolver.OK {
		rec.Body = body
	}
	resolver.SaveRecord(c.ctx, c.cfg.Store, o, rec, "tdmrep.json")
}
