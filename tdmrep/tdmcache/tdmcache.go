// Package tdmcache keeps each origin's /.well-known/tdmrep.json (package
// tdmrep) as robots.txt is kept. It does not judge: what a reservation
// means for a client is package policy's decision.
//
// The machinery is doccache's, which rslcache shares: files are fetched
// with the robots.txt resolver's client and status classes
// (resolver.Resolver.FetchFile: egress guard, parent proxy, fetch timeout,
// 500 KiB), cached in a bounded LRU with robots.txt's freshness
// (Cache-Control max-age within the minimum and maximum TTL, failures
// remembered with the same backoff), one fetch per cold origin however
// many requests wait for it, an expired entry served while one background
// refresh runs, and an earlier file kept while the origin is unreachable.
//
// What an answer means: 2xx, a file (parsed, whatever it holds); 404, 410
// and other 4xx, no file (no reservation); 429, 5xx and network failures,
// unknown.
package tdmcache

import (
	"context"
	"fmt"

	"github.com/robotsgate/robotsgate/doccache"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// Config configures a Cache (doccache.Config): Resolver is required;
// CacheEntries defaults to 100000 origins, CacheBytes to 64 MiB; Store
// records are keyed by the origin.
type Config = doccache.Config[*Result]

// Result is what an origin's tdmrep.json says right now. Results are
// shared between requests and must not be modified; a refresh replaces
// the whole Result in the cache.
type Result struct {
	// File is the parsed file when Status is OK, possibly an earlier copy
	// kept while the origin is unreachable (Stale); nil otherwise.
	File *tdmrep.File
	// Origin is whose file it is; URL where it was read, after redirects.
	Origin origin.Origin
	URL    string
	// State says how the result was obtained: Status is OK (a file),
	// Unavailable (4xx: no file, no reservation) or Unreachable (429,
	// 5xx, network: unknown); Err says why the latest fetch failed
	// (Unreachable, Stale), else nil.
	doccache.State
}

// newResult is the Result of what was fetched from loc.Origin
// (doccache.Kind.Result).
func newResult(loc doccache.Location, f doccache.Fetched[tdmrep.File]) *Result {
	return &Result{File: f.Doc, Origin: loc.Origin, URL: f.FinalURL, State: f.State}
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

// Answer is what one fetch received, for an archive (Config.OnAnswer):
// FetchedURL is the origin's tdmrep.json URL, Body at most
// tdmrep.MaxFileSize bytes.
type Answer = doccache.Answer[*Result]

// Stats are the cache's counters (Entries counts origins).
type Stats = doccache.Stats

// Cache keeps origins' tdmrep.json files. It is safe for concurrent use.
// Its Stats, Close (which stops background refreshes), Peek and Refetch
// (an operator's refresh of an origin) are doccache's.
type Cache struct{ *cache }

// cache is the doccache.Cache that Cache is, by a name that keeps it
// unexported.
type cache = doccache.Cache[origin.Origin, tdmrep.File, *Result]

// kind is what tdmrep.json is to doccache: one per origin, at
// tdmrep.Path, where a 4xx says that there is no file.
var kind = doccache.Kind[origin.Origin, tdmrep.File, *Result]{
	What:    "tdmrep.json",
	Accept:  "application/json, */*;q=0.5",
	Entries: 100000,
	Bytes:   64 << 20,
	Locate: func(o origin.Origin) doccache.Location {
		return doccache.Location{Origin: o, Target: tdmrep.Path, URL: o.URL(tdmrep.Path), StoreKey: o}
	},
	Parse: func(body []byte, truncated bool) (*tdmrep.File, error) {
		f := tdmrep.Parse(body)
		f.Truncated = f.Truncated || truncated
		return f, nil
	},
	Size:            (*tdmrep.File).Size,
	AbsenceIsAnswer: true,
	Result:          newResult,
}

// New returns a Cache for cfg.
func New(cfg Config) (*Cache, error) {
	c, err := doccache.New(kind, cfg)
	if err != nil {
		return nil, fmt.Errorf("tdmcache: %w", err)
	}
	return &Cache{cache: c}, nil
}

// Lookup returns what o's tdmrep.json says. A fresh cached result is
// returned at once, an expired one that has a file (or none, 4xx) too
// while one background refresh runs; otherwise the caller waits for the
// one shared fetch of o, having passed ctx's cold gate
// (resolver.WithColdGate), and only ctx's cancellation ends that wait
// early (the fetch goes on for the others): it is then the only error,
// with resolver.ErrColdLimit when the gate gave no place in time.
func (c *Cache) Lookup(ctx context.Context, o origin.Origin) (*Result, error) {
	res, err := c.cache.Lookup(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("tdmrep.json of %s: %w", o, err)
	}
	return res, nil
}
