// Package doccache keeps documents fetched beside robots.txt as the
// resolver keeps robots.txt: each origin's tdmrep.json (TDMRepCache, in
// tdmrep.go) and RSL licence documents (RSLCache, in rsl.go), on
// machinery they share, generic over the parsed document (Cache, in this
// file). The machinery neither parses nor judges: a Kind says how a body
// is read and what a key names.
//
// Documents are fetched with the robots.txt resolver's client and status
// classes (resolver.Resolver.FetchFile), cached in an LRU bounded in
// entries and bytes (sizedlru) with robots.txt's freshness (Freshness,
// RetryDelay: failures remembered with the same backoff), one fetch per
// cold key however many requests wait for it (after the client's cold
// gate, resolver.EnterCold), an expired entry served while one background
// refresh runs, an earlier document kept while its server is unreachable
// (Stale), every answer reported (OnAnswer, for an archive) and documents
// shared through a fleet's Store.
package doccache

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/internal/sizedlru"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// Location is where the document a key names is read and shared.
type Location struct {
	// Origin is the server asked, Target the request-target asked of it.
	Origin origin.Origin
	Target string
	// URL is the document's URL as named (Answer.FetchedURL).
	URL string
	// StoreKey is the key of its record in a shared Store.
	StoreKey origin.Origin
}

// Fetched is what the cache knows of one document, whatever its kind; a
// Kind turns it into the result its callers read (Kind.Result).
type Fetched[T any] struct {
	// Doc is the parsed document, possibly an earlier copy (Stale); nil
	// when there is none.
	Doc *T
	// FinalURL is where the document was read, after redirects.
	FinalURL string
	State
}

// State is what a result says of how it was obtained, whatever its
// document: TDMRepResult and RSLResult embed it.
type State struct {
	// Status classes the answer the result rests on as robots.txt's are
	// (OK, Unavailable: a 4xx, Unreachable: 429, 5xx, network); what it
	// means for a document is its cache's to say. HTTPStatus is the
	// answer's status, 0 when there was none.
	Status     resolver.Status
	HTTPStatus int
	// Stale reports that the document is an earlier copy, the latest
	// fetch having failed (Err says how).
	Stale bool
	// SHA256 names the body the document was parsed from, when the cache
	// archives (Config.OnAnswer); "" otherwise.
	SHA256 string
	// FetchedAt is when the result was obtained (for a Stale one, the
	// copy's); Expires when it stops being fresh (for a failure, the next
	// retry).
	FetchedAt, Expires time.Time
	// Failures counts the fetches that failed in a row (0 after a success).
	Failures int
	// Err says why the latest fetch failed, or why its body is not a
	// document (Kind.Parse's error); nil otherwise.
	Err error
}

// Kind is one kind of document: how it is fetched, parsed, measured and
// handed to callers. T is the parsed document, K the cache key, R the
// result callers read (a pointer, shared between requests).
type Kind[K comparable, T, R any] struct {
	// What names the documents in the shared store's log lines
	// ("tdmrep.json").
	What string
	// Accept is the Accept header of the fetches.
	Accept string
	// Entries and Bytes are the default bounds of the cache
	// (Config.CacheEntries, Config.CacheBytes).
	Entries int
	Bytes   int64
	// Locate says where the document key names is. It is called when
	// the key is to be fetched (cold, expired, Refetch), never for a
	// fresh hit, so that a hit costs no allocation.
	Locate func(key K) Location
	// Parse reads a 2xx body (truncated: it was longer than the fetch
	// reads): a document, or the error that says why there is none. It
	// does no I/O and is bounded as the body is.
	Parse func(body []byte, truncated bool) (*T, error)
	// AbsenceIsAnswer: a 4xx says that there is no document, an answer
	// that keeps serving while it is refreshed (tdmrep.json); otherwise
	// only a document does.
	AbsenceIsAnswer bool
	// Size is what a document keeps on the heap, for the byte bound
	// (nil gives 0).
	Size func(*T) int64
	// Result makes the result callers read of what was fetched at loc,
	// once per fetch: lookups share it until the next.
	Result func(loc Location, f Fetched[T]) R
}

// Config configures a Cache of results R (TDMRepConfig and RSLConfig
// are this).
type Config[R any] struct {
	// Resolver fetches the documents (FetchFile) and gives their
	// freshness (Freshness, RetryDelay): robots.txt's client and rules.
	// Required.
	Resolver *resolver.Resolver
	// CacheEntries is how many documents the cache holds; CacheBytes
	// bounds the memory the cached results keep, as their parsed
	// documents measure it (Kind.Size). Default: the Kind's (Kind.Entries,
	// Kind.Bytes).
	CacheEntries int
	CacheBytes   int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnAnswer, when set, is called after every fetch, and every record
	// read from Store, with what it received (an archive's record), and
	// every document keeps the SHA-256 of its body (its SHA256). It runs
	// on the fetch's goroutine: it must not block.
	OnAnswer func(Answer[R])
	// Store, when set, shares fetched documents between instances (a
	// fleet), as the robots.txt resolver's Store does, one record per
	// Location.StoreKey: a cold key is looked up there before it is
	// fetched, and a document (or a 4xx) fetched is saved there until it
	// expires. Failures are not shared: each instance retries on its own
	// schedule. A failing store only means a fetch.
	Store resolver.Store
	// Admit, when set, is asked before every fetch (cold, a background
	// refresh, Refetch), on the fetch's own context (detached from any
	// caller), whether the document may be fetched now; it may hold the
	// fetch (a Crawl-delay). An error leaves the document unfetched: the
	// result is a failure whose Err is a *NotFetchedError, retried on the
	// failures' schedule, an earlier document kept (Stale). Otherwise done
	// is called with the answer once the fetch has ended.
	Admit func(ctx context.Context, loc Location) (done func(*resolver.FileAnswer), err error)
	// Miss, when set, is asked with the caller's context on a lookup that
	// would wait for a fetch (a per-request budget of fetches): an error
	// makes the lookup's result a failure whose Err is a *NotFetchedError,
	// neither fetched nor cached.
	Miss func(ctx context.Context, loc Location) error
}

// NotFetchedError is a document that was not fetched because
// Config.Admit or Config.Miss refused it.
type NotFetchedError struct{ Err error }

func (e *NotFetchedError) Error() string { return "not fetched: " + e.Err.Error() }
func (e *NotFetchedError) Unwrap() error { return e.Err }

// Answer is what one fetch, or one record of the shared store, received,
// for an archive (Config.OnAnswer).
type Answer[R any] struct {
	// Result is the verdict it gave (for a failure, possibly an earlier
	// copy marked Stale).
	Result R
	// Time is when the answer arrived.
	Time time.Time
	// Origin is the server asked; FetchedURL what was asked for
	// (Location.URL); FinalURL where the answer came from, after
	// redirects.
	Origin               origin.Origin
	FetchedURL, FinalURL string
	// HTTPStatus is the final answer's status, 0 when there was none.
	HTTPStatus int
	// Header is the final answer's header, nil when there was none.
	Header http.Header
	// Body is the bytes parsed (2xx), nil otherwise. Truncated: the
	// answer was longer than the fetch reads.
	Body      []byte
	Truncated bool
	// Shared: the answer came from the shared store (another instance
	// fetched it), not from the server.
	Shared bool
}

// Stats are a cache's counters.
type Stats struct {
	Hits, Misses uint64 // lookups answered at once, and not
	Entries      int    // documents cached now
	Bytes        int64  // the memory the cached results keep, as measured for the byte bound
}

// entry is what the LRU holds for a key: what was fetched, which the next
// fetch builds on (Failures, the Stale copy), and the result made of it.
type entry[T, R any] struct {
	f          Fetched[T]
	res        R
	size       int64       // what it keeps on the heap, for the byte bound
	usable     bool        // it may keep serving while it is refreshed
	refreshing atomic.Bool // a background refresh is under way
}

// Cache keeps documents of one Kind. It is safe for concurrent use. Close
// stops background refreshes.
type Cache[K comparable, T, R any] struct {
	kind   Kind[K, T, R]
	cfg    Config[R]
	cache  *sizedlru.Cache[K, *entry[T, R]]
	flight resolver.Flight[R]

	ctx       context.Context // parent of the fetches, cancelled by Close
	cancel    context.CancelFunc
	closeOnce sync.Once

	hits, misses atomic.Uint64
}

// New returns a Cache of kind's documents for cfg.
func New[K comparable, T, R any](kind Kind[K, T, R], cfg Config[R]) (*Cache[K, T, R], error) {
	if cfg.Resolver == nil {
		return nil, errors.New("no resolver")
	}
	cfg.CacheEntries = cmp.Or(cfg.CacheEntries, kind.Entries)
	cfg.CacheBytes = cmp.Or(cfg.CacheBytes, kind.Bytes)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cache, err := sizedlru.New[K, *entry[T, R]](cfg.CacheEntries, cfg.CacheBytes)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache[K, T, R]{kind: kind, cfg: cfg, cache: cache, ctx: ctx, cancel: cancel}, nil
}

// Stats returns the current counters.
func (c *Cache[K, T, R]) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: c.cache.Len(), Bytes: c.cache.Bytes()}
}

// Close cancels the fetches under way and waits for background refreshes
// to end. Calling it again does nothing.
func (c *Cache[K, T, R]) Close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.flight.Close()
	})
}

// Peek returns the result cached for key, fresh or not, without fetching
// or touching its place in the LRU.
func (c *Cache[K, T, R]) Peek(key K) (R, bool) {
	e, ok := c.cache.Peek(key)
	if !ok {
		var zero R
		return zero, false
	}
	return e.res, true
}

// Lookup returns the result for key. A fresh cached result is returned at
// once, an expired usable one (Kind.AbsenceIsAnswer) too while one
// background refresh runs; otherwise the caller waits for the one shared
// fetch of key, having passed ctx's cold gate (resolver.WithColdGate),
// and only ctx's cancellation ends that wait early (the fetch goes on for
// the others): it is then the only error, with resolver.ErrColdLimit when
// the gate gave no place in time.
func (c *Cache[K, T, R]) Lookup(ctx context.Context, key K) (R, error) {
	if e, ok := c.cache.Get(key); ok {
		if c.cfg.Now().Before(e.f.Expires) {
			c.hits.Add(1)
			return e.res, nil
		}
		if e.usable {
			c.hits.Add(1)
			loc := c.kind.Locate(key)
			c.flight.Refresh(&e.refreshing, loc.URL, func() R { return c.refresh(key, loc) })
			return e.res, nil
		}
	}
	c.misses.Add(1)
	loc := c.kind.Locate(key)
	if c.cfg.Miss != nil {
		if err := c.cfg.Miss(ctx, loc); err != nil {
			now := c.cfg.Now()
			return c.kind.Result(loc, Fetched[T]{State: State{Status: resolver.Unreachable, FetchedAt: now, Expires: now,
				Err: &NotFetchedError{err}}}), nil
		}
	}
	release, err := resolver.EnterCold(ctx)
	if err != nil {
		var zero R
		return zero, err
	}
	defer release()
	return c.flight.Wait(ctx, loc.URL, func() R { return c.refresh(key, loc) })
}

// refresh fetches the document and caches the result. It runs detached
// from any request: one caller giving up must not fail the fetch for the
// others.
func (c *Cache[K, T, R]) refresh(key K, loc Location) R {
	prev, _ := c.cache.Peek(key)
	if prev != nil && c.cfg.Now().Before(prev.f.Expires) {
		return prev.res // stored by the flight that just ended
	}
	if c.cfg.Store != nil {
		// Freshness without max-age is the resolver's robots.max_ttl, the
		// longest freshness a stored document may have.
		maxTTL := c.cfg.Resolver.Freshness(-1)
		if rec, ok := resolver.LoadRecord(c.ctx, c.cfg.Store, loc.StoreKey, c.cfg.Now(), maxTTL, c.kind.What); ok {
			return c.fromRecord(key, loc, rec)
		}
		rec, found, unlock := resolver.FetchOnce(c.ctx, c.cfg.Store, loc.StoreKey, c.cfg.Now, c.cfg.Resolver.FetchTimeout()+time.Second, maxTTL, c.kind.What)
		if found {
			return c.fromRecord(key, loc, rec)
		}
		defer unlock()
	}
	return c.fetch(key, loc, prev)
}

// Refetch fetches the document key names now, whatever the cache and the
// shared store hold (an operator's refresh), caches the result and shares
// it.
func (c *Cache[K, T, R]) Refetch(key K) R {
	prev, _ := c.cache.Peek(key)
	return c.fetch(key, c.kind.Locate(key), prev)
}

// fetch fetches the document, caches and shares the result and tells
// OnAnswer.
func (c *Cache[K, T, R]) fetch(key K, loc Location, prev *entry[T, R]) R {
	a := c.admitted(loc)
	now := c.cfg.Now()
	f := c.verdict(prev, &a, now)
	e := c.entry(loc, f)
	c.cache.Add(key, e, e.size)
	if c.cfg.Store != nil && !f.Stale && (f.Status == resolver.OK || f.Status == resolver.Unavailable) {
		rec := resolver.Record{Status: f.Status, HTTPStatus: f.HTTPStatus, URL: f.FinalURL, FetchedAt: f.FetchedAt, Expires: f.Expires}
		if f.Status == resolver.OK {
			rec.Body = a.Body
		}
		resolver.SaveRecord(c.ctx, c.cfg.Store, loc.StoreKey, rec, c.kind.What)
	}
	var notFetched *NotFetchedError
	if c.cfg.OnAnswer != nil && !errors.As(a.Err, &notFetched) { // nothing was received
		ans := Answer[R]{Result: e.res, Time: now, Origin: loc.Origin, FetchedURL: loc.URL, FinalURL: a.URL,
			HTTPStatus: a.HTTPStatus, Header: a.Header, Truncated: a.Truncated}
		if a.Status == resolver.OK {
			ans.Body = a.Body
		}
		c.cfg.OnAnswer(ans)
	}
	return e.res
}

// admitted fetches the document when Config.Admit lets it, telling
// Admit's done the answer; a refusal is an Unreachable answer whose Err
// is a *NotFetchedError.
func (c *Cache[K, T, R]) admitted(loc Location) resolver.FileAnswer {
	if c.cfg.Admit == nil {
		return c.cfg.Resolver.FetchFile(c.ctx, loc.Origin, loc.Target, c.kind.Accept)
	}
	done, err := c.cfg.Admit(c.ctx, loc)
	if err != nil {
		return resolver.FileAnswer{Status: resolver.Unreachable, URL: loc.URL, Err: &NotFetchedError{err}}
	}
	a := c.cfg.Resolver.FetchFile(c.ctx, loc.Origin, loc.Target, c.kind.Accept)
	done(&a)
	return a
}

// verdict turns one fetch into what to cache, prev being the entry it
// replaces (nil for none).
func (c *Cache[K, T, R]) verdict(prev *entry[T, R], a *resolver.FileAnswer, now time.Time) Fetched[T] {
	r := c.cfg.Resolver
	f := Fetched[T]{FinalURL: a.URL, State: State{Status: a.Status, HTTPStatus: a.HTTPStatus, FetchedAt: now, Err: a.Err}}
	switch a.Status {
	case resolver.OK:
		f.Doc, f.Err = c.kind.Parse(a.Body, a.Truncated)
		if c.cfg.OnAnswer != nil {
			f.SHA256 = archive.Sum(a.Body)
		}
		f.Expires = now.Add(r.Freshness(a.MaxAge))
	case resolver.Unavailable:
		f.Expires = now.Add(r.Freshness(a.MaxAge))
	default:
		var p Fetched[T]
		if prev != nil {
			p = prev.f
		}
		f.Failures = p.Failures + 1
		f.Expires = now.Add(r.RetryDelay(f.Failures, a.RetryAfter))
		if p.Doc != nil {
			// As for robots.txt (RFC 9309 §2.4): while unreachable, the
			// earlier copy stands.
			f.Doc, f.Stale, f.Status, f.HTTPStatus = p.Doc, true, resolver.OK, p.HTTPStatus
			f.FinalURL, f.SHA256, f.FetchedAt = p.FinalURL, p.SHA256, p.FetchedAt
		}
	}
	return f
}

// fromRecord caches a record another instance stored, telling OnAnswer.
func (c *Cache[K, T, R]) fromRecord(key K, loc Location, rec resolver.Record) R {
	f := Fetched[T]{FinalURL: rec.URL, State: State{Status: rec.Status, HTTPStatus: rec.HTTPStatus, FetchedAt: rec.FetchedAt, Expires: rec.Expires}}
	if rec.Status == resolver.OK {
		f.Doc, f.Err = c.kind.Parse(rec.Body, rec.Truncated)
		if c.cfg.OnAnswer != nil {
			f.SHA256 = archive.Sum(rec.Body)
		}
	}
	e := c.entry(loc, f)
	if c.cfg.OnAnswer != nil {
		c.cfg.OnAnswer(Answer[R]{Result: e.res, Time: rec.FetchedAt, Origin: loc.Origin, FetchedURL: loc.URL, FinalURL: rec.URL,
			HTTPStatus: rec.HTTPStatus, Body: rec.Body, Truncated: rec.Truncated, Shared: true})
	}
	c.cache.Add(key, e, e.size)
	return e.res
}

// entry makes the entry to cache for f, fetched at loc.
func (c *Cache[K, T, R]) entry(loc Location, f Fetched[T]) *entry[T, R] {
	e := &entry[T, R]{f: f, res: c.kind.Result(loc, f)}
	e.usable = f.Doc != nil || c.kind.AbsenceIsAnswer && f.Status == resolver.Unavailable
	// The result holds what f and loc hold again: f's size stands for
	// its own.
	e.size = int64(unsafe.Sizeof(*e)+unsafe.Sizeof(f)) + int64(len(loc.URL)+len(f.FinalURL)+len(f.SHA256)) + c.kind.Size(f.Doc)
	if f.Err != nil {
		e.size += int64(len(f.Err.Error()))
	}
	return e
}
