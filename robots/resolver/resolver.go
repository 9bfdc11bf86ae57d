// Package resolver finds the robots.txt that applies to an origin: it
// fetches it with RFC 9309's status semantics (§2.3.1), keeps parsed files
// in a bounded LRU cache with their freshness, fetches each cold origin once
// however many requests wait for it, refreshes expired entries in the
// background while the old copy keeps serving, and falls back to an expired
// copy while an origin is unreachable. It also fetches other per-origin
// files the same way (FetchFile), for their own caches.
//
// It does not judge requests (callers match paths with package robots),
// must dial only through the egress guard it is given, and must never turn
// a failure into "allow everything": only a 4xx other than 429 means that.
package resolver

import (
	"cmp"
	"context"
	"crypto/x509"
	"fmt"
	"hash/maphash"
	"math"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/internal/sizedlru"
	"github.com/robotsgate/robotsgate/origin"
)

// Config configures a Resolver. Zero fields take the defaults given.
type Config struct {
	// UserAgent is sent with every fetch. Default
	// "robotsgate/1.0 (+https://github.com/robotsgate/robotsgate)": a product
	// token and a URL that says who fetches.
	UserAgent string
	// FetchTimeout bounds a whole fetch, redirects and body included.
	// Default 10s.
	FetchTimeout time.Duration
	// CacheEntries is how many origins the cache holds. Default 100000.
	// CacheBytes bounds the memory the cached results keep, as their
	// parsed files measure it (robots.File.Size): the least recently used
	// go first. Default 256 MiB.
	CacheEntries int
	CacheBytes   int64
	// MinTTL is the shortest freshness, whatever Cache-Control says (so
	// max-age=0 does not turn every request into a fetch). Default 1m.
	MinTTL time.Duration
	// MaxTTL is the longest freshness and the default without max-age
	// (RFC 9309 §2.4: 24 hours). Default 24h.
	MaxTTL time.Duration
	// RetryMin is the first retry delay after a failure; it doubles with
	// each consecutive failure up to RetryMax. Defaults 10s and 10m. A
	// longer Retry-After from the origin is honoured (up to MaxTTL).
	RetryMin, RetryMax time.Duration
	// DialContext connects to origins. Default: an egress.Guard with
	// BlockPrivate, so redirects to internal addresses are not followed.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Proxy, when set, chooses the proxy each fetch goes through, redirects
	// included (as http.Transport.Proxy: nil URL for a direct connection;
	// an error fails the fetch, which is then unreachable). With a proxy,
	// DialContext dials the proxy, so Proxy must check the destination
	// itself. Nil: always direct, never a proxy from the environment.
	Proxy func(*http.Request) (*url.URL, error)
	// RootCAs verifies origins' TLS certificates; nil means the system roots.
	RootCAs *x509.CertPool
	// Store, when set, shares fetched files between instances (a fleet).
	Store Store
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnAnswer, when set, is called after every robots.txt fetch with what
	// it received (an archive's record), and every fetched file keeps the
	// SHA-256 of its body (Result.SHA256) for the audit log. It runs on
	// the fetch's goroutine: it must not block.
	OnAnswer func(Answer)
	// OnFetch, when set, is called after every robots.txt fetch with the
	// Result it gave (for a failure, possibly an earlier copy marked
	// Stale; Cause and Failures say what failed and how often in a row)
	// and its duration: metrics and the failure log.
	OnFetch func(*Result, time.Duration)
	// WrapTransport, when set, wraps the transport fetches go through: it
	// sees every request, each redirect hop its own (e.g. to sign it).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

func (c *Config) setDefaults() {
	c.UserAgent = cmp.Or(c.UserAgent, "robotsgate/1.0 (+https://github.com/robotsgate/robotsgate)")
	c.FetchTimeout = cmp.Or(c.FetchTimeout, 10*time.Second)
	c.CacheEntries = cmp.Or(c.CacheEntries, 100000)
	c.CacheBytes = cmp.Or(c.CacheBytes, 256<<20)
	c.MinTTL = cmp.Or(c.MinTTL, time.Minute)
	c.MaxTTL = cmp.Or(c.MaxTTL, 24*time.Hour)
	c.RetryMin = cmp.Or(c.RetryMin, 10*time.Second)
	c.RetryMax = cmp.Or(c.RetryMax, 10*time.Minute)
	if c.DialContext == nil {
		c.DialContext = (&egress.Guard{BlockPrivate: true}).DialContext
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Resolver resolves origins to their robots.txt. It is safe for concurrent
// use. Close stops background refreshes.
type Resolver struct {
	cfg    Config
	client *http.Client
	// cache is keyed by a seeded hash of the origin rather than the origin
	// itself, which would be stored twice more per entry (the LRU's element
	// and its map); a Result names its origin, so a collision is a miss.
	cache *sizedlru.Cache[uint64, *Result]
	// pinned holds the robots.txt files fetched from one address of their
	// origin (ResolveAt), by origin and address.
	pinned *sizedlru.Cache[pinnedKey, *Result]
	seed   maphash.Seed
	flight Flight[*Result]

	ctx       context.Context // parent of background work, cancelled by Close
	cancel    context.CancelFunc
	closeOnce sync.Once

	// hitNow is the clock of the cache-hit path: coarse unless Config.Now
	// is set.
	hitNow func() time.Time
	clock  *coarseClock

	// hits and misses count cache lookups: a fresh or usable entry, or a
	// wait for a fetch.
	hits, misses atomic.Uint64

	// refreshed, when set by tests, is called after each refresh is stored.
	refreshed func(origin.Origin)
}

// Stats are the resolver's counters.
type Stats struct {
	Bytes        int64  // the memory the cached results keep, as measured for the byte bound
	Hits, Misses uint64 // cache lookups answered at once, and not
	Entries      int    // origins cached now
}

// Stats returns the current counters.
func (r *Resolver) Stats() Stats {
	return Stats{Hits: r.hits.Load(), Misses: r.misses.Load(), Entries: r.cache.Len() + r.pinned.Len(),
		Bytes: r.cache.Bytes() + r.pinned.Bytes()}
}

// promoteEvery limits LRU promotions of a hot entry: a hit is a read-locked
// Peek, and only once a second a write-locked Get that refreshes recency.
const promoteEvery = int64(time.Second)

// New returns a Resolver for cfg.
func New(cfg Config) (*Resolver, error) {
	customClock := cfg.Now != nil
	cfg.setDefaults()
	if cfg.MinTTL > cfg.MaxTTL {
		return nil, fmt.Errorf("resolver: min TTL %v exceeds max TTL %v", cfg.MinTTL, cfg.MaxTTL)
	}
	cache, err := sizedlru.New[uint64, *Result](cfg.CacheEntries, cfg.CacheBytes)
	if err != nil {
		return nil, fmt.Errorf("resolver: cache: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pinned, err := sizedlru.New[pinnedKey, *Result](max(cfg.CacheEntries/pinnedShare, 1), max(cfg.CacheBytes/pinnedShare, 1))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("resolver: cache: %w", err)
	}
	r := &Resolver{cfg: cfg, cache: cache, pinned: pinned, seed: maphash.MakeSeed(), ctx: ctx, cancel: cancel, hitNow: cfg.Now}
	if !customClock {
		r.clock = startCoarseClock()
		r.hitNow = r.clock.Now
	}
	r.client = newClient(&r.cfg, true)
	return r, nil
}

// Close cancels background refreshes and waits for them to end. Calling it
// again does nothing.
func (r *Resolver) Close() {
	r.closeOnce.Do(func() {
		r.cancel()
		r.flight.Close()
		r.client.CloseIdleConnections()
		if r.clock != nil {
			r.clock.Stop()
		}
	})
}

// Resolve returns the robots.txt verdict for o. A fresh cached entry costs
// no allocation. An expired entry with rules is returned as is while one
// background refresh runs. Otherwise the caller waits for the one shared
// fetch of o, having passed ctx's ColdGate (WithColdGate) if it has one;
// only ctx's cancellation ends that wait early (the fetch goes on for the
// others), and it is then the only error, with ErrColdLimit when the gate
// gave no place in time.
func (r *Resolver) Resolve(ctx context.Context, o origin.Origin) (*Result, error) {
	now := r.hitNow()
	if res, ok := r.peek(o); ok {
		r.promote(o, res, now)
		if res.fresh(now) {
			r.hits.Add(1)
			return res, nil
		}
		if res.usable() {
			r.hits.Add(1)
			r.refreshInBackground(o, res)
			return res, nil
		}
	}
	r.misses.Add(1)
	release, err := enterCold(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", o, err)
	}
	defer release()
	res, err := r.flight.Wait(ctx, o.String(), func() *Result { return r.refresh(o) })
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", o, err)
	}
	return res, nil
}

func (r *Resolver) promote(o origin.Origin, res *Result, now time.Time) {
	n := now.UnixNano()
	if last := res.promoted.Load(); n-last > promoteEvery && res.promoted.CompareAndSwap(last, n) {
		r.cache.Get(r.key(o))
	}
}

// key is o's cache key: a hash seeded per Resolver, so that nobody can
// choose hosts that collide. Only the host is hashed, with the port and the
// scheme's length (http or https) mixed in, which costs half of hashing the
// whole Origin; a collision costs a fetch, never a wrong answer.
func (r *Resolver) key(o origin.Origin) uint64 {
	const golden = 0x9e3779b97f4a7c15
	return maphash.String(r.seed, o.Host) ^ (uint64(o.Port)<<8|uint64(len(o.Scheme)))*golden
}

// peek returns the cached Result for o without touching its recency.
func (r *Resolver) peek(o origin.Origin) (*Result, bool) {
	res, ok := r.cache.Peek(r.key(o))
	if !ok || !res.is(o) {
		return nil, false
	}
	return res, true
}

// add caches res under its origin, replacing what was there.
func (r *Resolver) add(res *Result) { r.cache.Add(r.key(res.Origin()), res, res.size()) }

// refreshInBackground starts one refresh of an expired res; the flag lives
// in res, so the Result that replaces it starts without one.
func (r *Resolver) refreshInBackground(o origin.Origin, res *Result) {
	r.flight.Refresh(&res.refreshing, o.String(), func() *Result { return r.refresh(o) })
}

// refresh obtains a new verdict for o (from the shared store or a fetch),
// merges it with the cached one and stores it. It runs detached from any
// request: one caller giving up must not fail the fetch for the others.
func (r *Resolver) refresh(o origin.Origin) *Result {
	prev, _ := r.peek(o)
	if prev != nil && prev.fresh(r.cfg.Now()) {
		// A caller that missed the cache just before the previous flight
		// stored its result must not start a second fetch.
		return prev
	}
	res := r.obtain(o, prev)
	res.promoted.Store(r.cfg.Now().UnixNano())
	r.add(res)
	if r.refreshed != nil {
		r.refreshed(o)
	}
	return res
}

// obtain turns a fetch (or a shared record) into the Result to cache.
func (r *Resolver) obtain(o origin.Origin, prev *Result) *Result {
	if res, ok := r.fromStore(o); ok {
		return res
	}
	shared, unlock := r.fleetFetch(o)
	if shared != nil {
		return shared
	}
	defer unlock()
	return r.fetchVerdict(o, prev)
}

// fetchVerdict fetches o's robots.txt (conditionally on prev's validators)
// and turns the answer into the Result to cache, telling OnFetch and
// OnAnswer.
func (r *Resolver) fetchVerdict(o origin.Origin, prev *Result) *Result {
	return r.fetchVerdictWith(r.client, o, prev, true)
}

// fetchVerdictWith is fetchVerdict through client, sharing the answer
// through the Store when share is set.
func (r *Resolver) fetchVerdictWith(client *http.Client, o origin.Origin, prev *Result, share bool) *Result {
	start := r.cfg.Now()
	f := r.fetch(r.ctx, client, o, prev)
	now := r.cfg.Now()
	res := r.verdict(o, prev, f, now, share)
	if r.cfg.OnFetch != nil {
		r.cfg.OnFetch(res, now.Sub(start))
	}
	if r.cfg.OnAnswer != nil {
		r.cfg.OnAnswer(Answer{Result: res, Time: now, FinalURL: f.finalURL(), HTTPStatus: f.httpStatus, Header: f.header, Body: f.body, Truncated: f.truncated})
	}
	return res
}

// Answer is what one robots.txt fetch received, for an archive
// (Config.OnAnswer).
type Answer struct {
	// Result is the verdict it gave: Status, Cause, SHA256 (for a 304,
	// the kept body's), Origin.
	Result *Result
	// Time is when the answer arrived.
	Time time.Time
	// FinalURL is where it came from after redirects ("" for none).
	FinalURL string
	// HTTPStatus is the final answer's status (304 for a revalidation),
	// 0 when there was none.
	HTTPStatus int
	// Header is the final answer's header, nil when there was none.
	Header http.Header
	// Body is the bytes judged (2xx), at most robots.MaxFileSize; nil for
	// a 304 or a failure. Truncated: the answer was longer.
	Body      []byte
	Truncated bool
	// Shared: the answer came from the shared store (another instance
	// fetched it at Time), not from a fetch of this process.
	Shared bool
}

// verdict turns one fetch into the Result to cache.
func (r *Resolver) verdict(o origin.Origin, prev *Result, f fetched, now time.Time, share bool) *Result {
	if f.notModified {
		return prev.revalidated(now, now.Add(r.ttl(f.maxAge)), f.header.Get("ETag"), f.header.Get("Last-Modified"))
	}
	res := newResult(o, f.status, f.httpStatus)
	res.File, res.fetchedAt = f.file, now.UnixNano()
	res.setDetail(f.err, f.url)
	if f.status == OK {
		sum := ""
		if r.cfg.OnAnswer != nil {
			sum = archive.Sum(f.body)
		}
		res.setBody(sum, f.header.Get("ETag"), f.header.Get("Last-Modified"))
	}
	if f.status != Unreachable {
		res.expires = now.Add(r.ttl(f.maxAge)).UnixNano()
		if share {
			r.toStore(o, res, f)
		}
		return res
	}
	failures := uint16(1)
	if prev != nil && prev.failures < math.MaxUint16 {
		failures = prev.failures + 1
	}
	retry := r.RetryDelay(int(failures), f.retryAfter)
	if prev != nil && prev.File != nil {
		// RFC 9309 §2.4: while unreachable, keep using the cached copy.
		return prev.staleCopy(f.err, failures, now.Add(retry))
	}
	res.expires, res.failures = now.Add(retry).UnixNano(), failures
	return res
}

func (r *Resolver) ttl(maxAge time.Duration) time.Duration {
	if maxAge < 0 {
		return r.cfg.MaxTTL
	}
	return min(max(maxAge, r.cfg.MinTTL), r.cfg.MaxTTL)
}

// Refetch fetches o's robots.txt now, whatever the cache and the shared
// store hold (an operator's refresh: the site changed its file), caches
// the result and shares it like any fetch. The fetch is unconditional: a
// 304 must not keep a copy the operator wants gone. An unreachable file
// keeps an earlier copy, as always (RFC 9309 §2.4).
func (r *Resolver) Refetch(o origin.Origin) *Result {
	prev, _ := r.peek(o)
	var uncond *Result
	if prev != nil && prev.File != nil {
		uncond = prev.withoutValidators()
	}
	res := r.fetchVerdict(o, uncond)
	res.promoted.Store(r.cfg.Now().UnixNano())
	r.add(res)
	return res
}

// FetchTimeout returns the bound of one fetch (Config.FetchTimeout).
func (r *Resolver) FetchTimeout() time.Duration { return r.cfg.FetchTimeout }

// Freshness returns how long an answer with this Cache-Control max-age
// (-1: none) stays fresh: max-age within MinTTL and MaxTTL, MaxTTL without
// one. It is robots.txt's rule, for the caches of other files (FetchFile).
func (r *Resolver) Freshness(maxAge time.Duration) time.Duration { return r.ttl(maxAge) }

// RetryDelay returns how long a failure is remembered after failures
// consecutive failed fetches (1 for the first): the backoff from RetryMin
// doubling up to RetryMax, or a longer Retry-After, at most MaxTTL.
func (r *Resolver) RetryDelay(failures int, retryAfter time.Duration) time.Duration {
	return min(max(r.backoff(failures), retryAfter), r.cfg.MaxTTL)
}

// backoff returns the retry delay after n consecutive failures.
func (r *Resolver) backoff(n int) time.Duration {
	d := r.cfg.RetryMin
	for i := 1; i < n && d < r.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, r.cfg.RetryMax)
}
