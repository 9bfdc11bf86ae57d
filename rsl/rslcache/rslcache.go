// Package rslcache keeps the RSL documents (package rsl) that sites name,
// one entry per document URL, as tdmcache keeps tdmrep.json. It does not
// judge: what a licence means for a client is package policy's decision.
//
// Documents are fetched with the robots.txt resolver's client and status
// classes (resolver.Resolver.FetchFile: egress guard — a document on
// another host than the site that names it must pass it too —, parent
// proxy, fetch timeout, 500 KiB), cached in an LRU bounded in entries and
// bytes with robots.txt's freshness (Cache-Control max-age within the
// minimum and maximum TTL, failures remembered with the same backoff), one
// fetch per cold URL however many requests wait for it, an expired entry
// served while one background refresh runs, and an earlier document kept
// while its server is unreachable.
//
// What an answer means: 2xx, a document, parsed; anything else (a 4xx,
// 429, 5xx, a network failure), or a body that is not a valid RSL
// document, leaves the licence unknown (Result.Unknown): a site that names
// a licence robotsgate cannot read has not said that there is none.
package rslcache

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/internal/sizedlru"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/rsl"
)

// accept is the Accept header of the fetches.
const accept = rsl.MediaType + ", application/xml;q=0.9, */*;q=0.5"

// Config configures a Cache.
type Config struct {
	// Resolver fetches the documents (FetchFile) and gives their
	// freshness (Freshness, RetryDelay): robots.txt's client and rules.
	// Required.
	Resolver *resolver.Resolver
	// CacheEntries is how many documents the cache holds. Default 10000.
	CacheEntries int
	// CacheBytes bounds the memory the cached results keep, as their
	// parsed documents measure it (rsl.Document.Size). Default 16 MiB.
	CacheBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnAnswer, when set, is called after every fetch with what it
	// received (an archive's record), and every document keeps the
	// SHA-256 of its body (Result.SHA256). It runs on the fetch's
	// goroutine: it must not block.
	OnAnswer func(Answer)
	// Store, when set, shares fetched documents between instances (a
	// fleet), as tdmcache's Store does, one record per document URL (its
	// key is derived from the URL's SHA-256: StoreKey). Failures are not
	// shared.
	Store resolver.Store
}

// Result is what an RSL document URL gives right now. Results are shared
// between requests and must not be modified.
type Result struct {
	// URL is the document's URL as named (absolute); FinalURL where it
	// was read, after redirects.
	URL, FinalURL string
	// Doc is the parsed document; nil when there is none (Unknown).
	Doc *rsl.Document
	// Status is OK (an answer with a body), Unavailable (4xx) or
	// Unreachable (429, 5xx, network) as robots.txt's answers are classed.
	Status resolver.Status
	// HTTPStatus is the status of the answer the result rests on, 0 when
	// there was none.
	HTTPStatus int
	// Stale reports that Doc is an earlier copy, the latest fetch having
	// failed (Err says how).
	Stale bool
	// SHA256 names the body Doc was parsed from, when the cache archives
	// (Config.OnAnswer); "" otherwise.
	SHA256 string
	// FetchedAt is when the result was obtained; Expires when it stops
	// being fresh (for a failure, the next retry).
	FetchedAt, Expires time.Time
	// Failures counts the fetches that failed in a row.
	Failures int
	// Err says why there is no document: the fetch's failure, or why the
	// body is not a document the judge can read (rsl.Parse's error).
	Err error

	refreshing atomic.Bool
}

// size is what r keeps on the heap, for the cache's byte bound.
func (r *Result) size() int64 {
	n := int64(unsafe.Sizeof(*r)) + int64(len(r.URL)+len(r.FinalURL)+len(r.SHA256)) + r.Doc.Size()
	if r.Err != nil {
		n += int64(len(r.Err.Error()))
	}
	return n
}

// Unknown reports whether the licence cannot be judged: no document
// (a failed fetch, a 4xx, a body that is not RSL) and no earlier copy.
func (r *Result) Unknown() bool { return r.Doc == nil }

// Cause says why there is no document, for a message: the fetch's cause
// (http_5xx, dns_error, ...), "http_4xx" for an answer without a
// document, or the parse error.
func (r *Result) Cause() string {
	switch {
	case r.Doc != nil:
		return ""
	case r.Status == resolver.OK && r.Err != nil:
		return "not an RSL document: " + r.Err.Error()
	case r.Status == resolver.Unavailable:
		return fmt.Sprintf("http_%d", r.HTTPStatus)
	}
	if c := resolver.CauseOf(r.Err); c != "" {
		return c
	}
	return "no answer"
}

// usable reports whether the result may keep serving while it is
// refreshed in the background.
func (r *Result) usable() bool { return r.Doc != nil }

// Answer is what one fetch received, for an archive (Config.OnAnswer).
type Answer struct {
	Result *Result
	// Time is when the answer arrived.
	Time time.Time
	// Origin is the document's origin; FetchedURL what was asked for;
	// FinalURL where the answer came from.
	Origin               origin.Origin
	FetchedURL, FinalURL string
	HTTPStatus           int
	Header               http.Header
	// Body is the bytes parsed (2xx), nil otherwise; Truncated: the
	// answer was longer than the fetch reads.
	Body      []byte
	Truncated bool
	// Shared: the answer came from the shared store.
	Shared bool
}

// Cache keeps RSL documents by URL. It is safe for concurrent use. Close
// stops background refreshes.
type Cache struct {
	cfg    Config
	cache  *sizedlru.Cache[string, *Result]
	flight resolver.Flight[*Result]

	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once

	hits, misses atomic.Uint64
}

// Stats are the cache's counters.
type Stats struct {
	Hits, Misses uint64
	Entries      int
	Bytes        int64
}

// Stats returns the current counters.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: c.cache.Len(), Bytes: c.cache.Bytes()}
}

// New returns a Cache for cfg.
func New(cfg Config) (*Cache, error) {
	if cfg.Resolver == nil {
		return nil, errors.New("rslcache: no resolver")
	}
	cfg.CacheEntries = cmp.Or(cfg.CacheEntries, 10000)
	cfg.CacheBytes = cmp.Or(cfg.CacheBytes, 16<<20)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cache, err := sizedlru.New[string, *Result](cfg.CacheEntries, cfg.CacheBytes)
	if err != nil {
		return nil, fmt.Errorf("rslcache: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{cfg: cfg, cache: cache, ctx: ctx, cancel: cancel}, nil
}

// Close cancels the fetches under way and waits for background refreshes
// to end.
func (c *Cache) Close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.flight.Close()
	})
}

// ErrNotHTTP is matched by Lookup's error for a URL that is not an
// absolute http(s) URL.
var ErrNotHTTP = errors.New("not an absolute http(s) URL")

// Lookup returns what the RSL document at rawURL (absolute http(s)) gives.
// A fresh cached result is returned at once, an expired one with a
// document too while one background refresh runs; otherwise the caller
// waits for the one shared fetch of the URL, having passed ctx's cold gate
// (resolver.WithColdGate). The errors are ctx's (with resolver.ErrColdLimit
// when the gate gave no place in time) and ErrNotHTTP.
func (c *Cache) Lookup(ctx context.Context, rawURL string) (*Result, error) {
	o, u, err := split(rawURL)
	if err != nil {
		return nil, err
	}
	if res, ok := c.cache.Get(rawURL); ok {
		if c.cfg.Now().Before(res.Expires) {
			c.hits.Add(1)
			return res, nil
		}
		if res.usable() {
			c.hits.Add(1)
			c.flight.Refresh(&res.refreshing, rawURL, func() *Result { return c.refresh(o, u, rawURL) })
			return res, nil
		}
	}
	c.misses.Add(1)
	release, err := resolver.EnterCold(ctx)
	if err != nil {
		return nil, fmt.Errorf("RSL document %s: %w", rawURL, err)
	}
	defer release()
	res, err := c.flight.Wait(ctx, rawURL, func() *Result { return c.refresh(o, u, rawURL) })
	if err != nil {
		return nil, fmt.Errorf("RSL document %s: %w", rawURL, err)
	}
	return res, nil
}

// split returns the origin and request-target of an absolute http(s) URL.
func split(rawURL string) (origin.Origin, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return origin.Origin{}, "", fmt.Errorf("RSL document %q: %w", rawURL, ErrNotHTTP)
	}
	o, err := origin.FromURL(u)
	if err != nil {
		return origin.Origin{}, "", fmt.Errorf("RSL document %q: %w: %v", rawURL, ErrNotHTTP, err)
	}
	return o, u.RequestURI(), nil
}

// StoreKey is the key under which a shared Store keeps the document at
// rawURL: a Store is keyed by origin, and a site may name several
// documents on one origin, so the key is an origin whose host is the
// URL's SHA-256 (under .rsl.invalid, a name no real origin has).
func StoreKey(o origin.Origin, rawURL string) origin.Origin {
	sum := sha256.Sum256([]byte(rawURL))
	return origin.Origin{Scheme: o.Scheme, Host: hex.EncodeToString(sum[:]) + ".rsl.invalid", Port: o.Port}
}

// refresh fetches the document and caches the result, detached from any
// request.
func (c *Cache) refresh(o origin.Origin, target, rawURL string) *Result {
	prev, _ := c.cache.Peek(rawURL)
	if prev != nil && c.cfg.Now().Before(prev.Expires) {
		return prev
	}
	if c.cfg.Store != nil {
		key := StoreKey(o, rawURL)
		if rec, ok := resolver.LoadRecord(c.ctx, c.cfg.Store, key, c.cfg.Now(), c.cfg.Resolver.Freshness(-1), "RSL document"); ok {
			res := c.fromRecord(o, rawURL, rec)
			c.cache.Add(rawURL, res, res.size())
			return res
		}
		rec, found, unlock := resolver.FetchOnce(c.ctx, c.cfg.Store, key, c.cfg.Now, c.cfg.Resolver.FetchTimeout()+time.Second, c.cfg.Resolver.Freshness(-1), "RSL document")
		if found {
			res := c.fromRecord(o, rawURL, rec)
			c.cache.Add(rawURL, res, res.size())
			return res
		}
		defer unlock()
	}
	return c.fetch(o, target, rawURL, prev)
}

// Refetch fetches the document at rawURL now, whatever the cache and the
// shared store hold (an operator's refresh), caches the result and shares
// it; nil for a URL that is not absolute http(s).
func (c *Cache) Refetch(rawURL string) *Result {
	o, target, err := split(rawURL)
	if err != nil {
		return nil
	}
	prev, _ := c.cache.Peek(rawURL)
	return c.fetch(o, target, rawURL, prev)
}

// fetch fetches the document, caches and shares the result and tells
// OnAnswer.
func (c *Cache) fetch(o origin.Origin, target, rawURL string, prev *Result) *Result {
	a := c.cfg.Resolver.FetchFile(c.ctx, o, target, accept)
	now := c.cfg.Now()
	res := c.verdict(rawURL, prev, &a, now)
	c.cache.Add(rawURL, res, res.size())
	if c.cfg.Store != nil && !res.Stale && (res.Status == resolver.OK || res.Status == resolver.Unavailable) {
		rec := resolver.Record{Status: res.Status, HTTPStatus: res.HTTPStatus, URL: res.FinalURL, FetchedAt: res.FetchedAt, Expires: res.Expires}
		if res.Status == resolver.OK {
			rec.Body = a.Body
		}
		resolver.SaveRecord(c.ctx, c.cfg.Store, StoreKey(o, rawURL), rec, "RSL document")
	}
	if c.cfg.OnAnswer != nil {
		ans := Answer{Result: res, Time: now, Origin: o, FetchedURL: rawURL, FinalURL: a.URL, HTTPStatus: a.HTTPStatus, Header: a.Header, Truncated: a.Truncated}
		if a.Status == resolver.OK {
			ans.Body = a.Body
		}
		c.cfg.OnAnswer(ans)
	}
	return res
}

// parse reads a fetched body: a document, or why it is not one (a body
// cut at the fetch's bound is not judged as if it were whole).
func parse(body []byte, truncated bool) (*rsl.Document, error) {
	if truncated {
		return nil, rsl.ErrTooLarge
	}
	return rsl.Parse(body)
}

// verdict turns one fetch into the Result to cache.
func (c *Cache) verdict(rawURL string, prev *Result, a *resolver.FileAnswer, now time.Time) *Result {
	r := c.cfg.Resolver
	res := &Result{URL: rawURL, FinalURL: a.URL, Status: a.Status, HTTPStatus: a.HTTPStatus, FetchedAt: now, Err: a.Err}
	switch a.Status {
	case resolver.OK:
		res.Doc, res.Err = parse(a.Body, a.Truncated)
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
		if prev != nil && prev.Doc != nil {
			// As for robots.txt (RFC 9309 §2.4): while unreachable, the
			// earlier copy stands.
			res.Doc, res.Stale, res.Status, res.HTTPStatus = prev.Doc, true, resolver.OK, prev.HTTPStatus
			res.FinalURL, res.SHA256, res.FetchedAt = prev.FinalURL, prev.SHA256, prev.FetchedAt
		}
	}
	return res
}

// fromRecord turns a record another instance stored into a Result.
func (c *Cache) fromRecord(o origin.Origin, rawURL string, rec resolver.Record) *Result {
	res := &Result{URL: rawURL, FinalURL: rec.URL, Status: rec.Status, HTTPStatus: rec.HTTPStatus, FetchedAt: rec.FetchedAt, Expires: rec.Expires}
	if rec.Status == resolver.OK {
		res.Doc, res.Err = parse(rec.Body, rec.Truncated)
		if c.cfg.OnAnswer != nil {
			res.SHA256 = archive.Sum(rec.Body)
		}
	}
	if c.cfg.OnAnswer != nil {
		c.cfg.OnAnswer(Answer{Result: res, Time: rec.FetchedAt, Origin: o, FetchedURL: rawURL, FinalURL: rec.URL,
			HTTPStatus: rec.HTTPStatus, Body: rec.Body, Truncated: rec.Truncated, Shared: true})
	}
	return res
}
