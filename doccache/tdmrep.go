// TDMRepCache keeps each origin's /.well-known/tdmrep.json (package
// tdmrep) as robots.txt is kept. It does not judge: what a reservation
// means for a client is package policy's decision.
//
// The machinery is this package's, which RSLCache shares: files are
// fetched with the robots.txt resolver's client and status classes
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

package doccache

import (
	"context"
	"fmt"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/tdmrep"
)

// TDMRepConfig configures a TDMRepCache (Config): Resolver is required;
// CacheEntries defaults to 100000 origins, CacheBytes to 64 MiB; Store
// records are keyed by the origin.
type TDMRepConfig = Config[*TDMRepResult]

// TDMRepResult is what an origin's tdmrep.json says right now. Results
// are shared between requests and must not be modified; a refresh
// replaces the whole TDMRepResult in the cache.
type TDMRepResult struct {
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
	State
}

// newTDMRepResult is the TDMRepResult of what was fetched from loc.Origin
// (Kind.Result).
func newTDMRepResult(loc Location, f Fetched[tdmrep.File]) *TDMRepResult {
	return &TDMRepResult{File: f.Doc, Origin: loc.Origin, URL: f.FinalURL, State: f.State}
}

// Unknown reports whether nothing is known of the origin's reservations:
// its tdmrep.json could not be fetched and no earlier copy stands in.
func (r *TDMRepResult) Unknown() bool { return r.File == nil && r.Status == resolver.Unreachable }

// Match returns what the file says about target (tdmrep.File.Match):
// nothing when there is no file.
func (r *TDMRepResult) Match(target string) tdmrep.Match { return r.File.Match(target) }

// Cause names why the latest fetch gave no file, as
// resolver.Result.Cause does (http_5xx, dns_error, ...); "" when it did.
func (r *TDMRepResult) Cause() string { return resolver.CauseOf(r.Err) }

// TDMRepAnswer is what one fetch received, for an archive
// (TDMRepConfig.OnAnswer): FetchedURL is the origin's tdmrep.json URL,
// Body at most tdmrep.MaxFileSize bytes.
type TDMRepAnswer = Answer[*TDMRepResult]

// TDMRepCache keeps origins' tdmrep.json files. It is safe for
// concurrent use. Its Stats (Entries counts origins), Close (which stops
// background refreshes), Peek and Refetch (an operator's refresh of an
// origin) are Cache's.
type TDMRepCache struct{ *tdmrepDocs }

// tdmrepDocs is the Cache that TDMRepCache is, by a name that keeps it
// unexported.
type tdmrepDocs = Cache[origin.Origin, tdmrep.File, *TDMRepResult]

// tdmrepKind is what tdmrep.json is to the Cache: one per origin, at
// tdmrep.Path, where a 4xx says that there is no file.
var tdmrepKind = Kind[origin.Origin, tdmrep.File, *TDMRepResult]{
	What:    "tdmrep.json",
	Accept:  "application/json, */*;q=0.5",
	Entries: 100000,
	Bytes:   64 << 20,
	Locate: func(o origin.Origin) Location {
		return Location{Origin: o, Target: tdmrep.Path, URL: o.URL(tdmrep.Path), StoreKey: o}
	},
	Parse: func(body []byte, truncated bool) (*tdmrep.File, error) {
		f := tdmrep.Parse(body)
		f.Truncated = f.Truncated || truncated
		return f, nil
	},
	Size:            (*tdmrep.File).Size,
	AbsenceIsAnswer: true,
	Result:          newTDMRepResult,
}

// NewTDMRep returns a TDMRepCache for cfg.
func NewTDMRep(cfg TDMRepConfig) (*TDMRepCache, error) {
	c, err := New(tdmrepKind, cfg)
	if err != nil {
		return nil, fmt.Errorf("tdmrep.json cache: %w", err)
	}
	return &TDMRepCache{tdmrepDocs: c}, nil
}

// Lookup returns what o's tdmrep.json says. A fresh cached result is
// returned at once, an expired one that has a file (or none, 4xx) too
// while one background refresh runs; otherwise the caller waits for the
// one shared fetch of o, having passed ctx's cold gate
// (resolver.WithColdGate), and only ctx's cancellation ends that wait
// early (the fetch goes on for the others): it is then the only error,
// with resolver.ErrColdLimit when the gate gave no place in time.
func (c *TDMRepCache) Lookup(ctx context.Context, o origin.Origin) (*TDMRepResult, error) {
	res, err := c.tdmrepDocs.Lookup(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("tdmrep.json of %s: %w", o, err)
	}
	return res, nil
}
