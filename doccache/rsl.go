// RSLCache keeps the RSL documents (package rsl) that sites name, one
// entry per document URL, as TDMRepCache keeps tdmrep.json. It does not
// judge: what a licence means for a client is package policy's decision.
//
// The machinery is this package's, which TDMRepCache shares: documents
// are fetched with the robots.txt resolver's client and status classes
// (resolver.Resolver.FetchFile: egress guard — a document on another host
// than the site that names it must pass it too —, parent proxy, fetch
// timeout, 500 KiB), cached in an LRU bounded in entries and bytes with
// robots.txt's freshness (Cache-Control max-age within the minimum and
// maximum TTL, failures remembered with the same backoff), one fetch per
// cold URL however many requests wait for it, an expired entry served
// while one background refresh runs, and an earlier document kept while
// its server is unreachable.
//
// What an answer means: 2xx, a document, parsed; anything else (a 4xx,
// 429, 5xx, a network failure), or a body that is not a valid RSL
// document, leaves the licence unknown (RSLResult.Unknown): a site that
// names a licence robotsgate cannot read has not said that there is none.

package doccache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots/resolver"
	"github.com/robotsgate/robotsgate/rsl"
)

// RSLDefaultBytes is the RSL cache's default bound on the memory it keeps
// (the proxy uses it; robotsgate's memory limit counts it).
const RSLDefaultBytes = 16 << 20

// RSLConfig configures an RSLCache (Config): Resolver is required;
// CacheEntries defaults to 10000 documents, CacheBytes to
// RSLDefaultBytes; Store records are keyed by RSLStoreKey (one record per
// document URL).
type RSLConfig = Config[*RSLResult]

// RSLResult is what an RSL document URL gives right now. Results are
// shared between requests and must not be modified.
type RSLResult struct {
	// URL is the document's URL as named (absolute); FinalURL where it
	// was read, after redirects.
	URL, FinalURL string
	// Doc is the parsed document, possibly an earlier copy (Stale); nil
	// when there is none (Unknown).
	Doc *rsl.Document
	// State says how the result was obtained: Status is OK (an answer
	// with a body), Unavailable (4xx) or Unreachable (429, 5xx, network);
	// Err says why there is no document: the fetch's failure, or why the
	// body is not a document the judge can read (rsl.Parse's error).
	State
}

// newRSLResult is the RSLResult of what was fetched at loc.URL
// (Kind.Result).
func newRSLResult(loc Location, f Fetched[rsl.Document]) *RSLResult {
	return &RSLResult{URL: loc.URL, FinalURL: f.FinalURL, Doc: f.Doc, State: f.State}
}

// Unknown reports whether the licence cannot be judged: no document
// (a failed fetch, a 4xx, a body that is not RSL) and no earlier copy.
func (r *RSLResult) Unknown() bool { return r.Doc == nil }

// Cause says why there is no document, for a message: the fetch's cause
// (http_5xx, dns_error, ...), "http_4xx" for an answer without a
// document, the parse error, or why it was not fetched (its origin's
// robots.txt, a cap: "not fetched: ...").
func (r *RSLResult) Cause() string {
	var notFetched *NotFetchedError
	switch {
	case r.Doc != nil:
		return ""
	case errors.As(r.Err, &notFetched) && resolver.CauseOf(notFetched.Err) == egress.CauseDenied:
		return egress.CauseDenied // as a fetch the egress guard refuses is named
	case errors.As(r.Err, &notFetched):
		return notFetched.Error() // robotsgate's own rules kept it from fetching the document
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

// RSLAnswer is what one fetch received, for an archive
// (RSLConfig.OnAnswer): Origin is the document's origin, FetchedURL its
// URL as named.
type RSLAnswer = Answer[*RSLResult]

// RSLCache keeps RSL documents by URL. It is safe for concurrent use. Its
// Stats (Entries counts documents), Close (which stops background
// refreshes) and Peek are Cache's.
type RSLCache struct{ *rslDocs }

// rslDocs is the Cache that RSLCache is, by a name that keeps it
// unexported.
type rslDocs = Cache[string, rsl.Document, *RSLResult]

// rslKind is what an RSL document is to the Cache: one per absolute URL
// (a key Lookup and Refetch have checked with splitRSL), shared under
// RSLStoreKey, where only a 2xx with a valid document is an answer.
var rslKind = Kind[string, rsl.Document, *RSLResult]{
	What:    "RSL document",
	Accept:  rsl.MediaType + ", application/xml;q=0.9, */*;q=0.5",
	Entries: 10000,
	Bytes:   RSLDefaultBytes,
	Locate: func(rawURL string) Location {
		o, target, _ := splitRSL(rawURL)
		return Location{Origin: o, Target: target, URL: rawURL, StoreKey: RSLStoreKey(o, rawURL)}
	},
	Parse:  parseRSL,
	Size:   (*rsl.Document).Size,
	Result: newRSLResult,
}

// NewRSL returns an RSLCache for cfg.
func NewRSL(cfg RSLConfig) (*RSLCache, error) {
	c, err := New(rslKind, cfg)
	if err != nil {
		return nil, fmt.Errorf("RSL cache: %w", err)
	}
	return &RSLCache{rslDocs: c}, nil
}

// ErrNotHTTP is matched by RSLCache.Lookup's error for a URL that is not
// an absolute http(s) URL.
var ErrNotHTTP = errors.New("not an absolute http(s) URL")

// Lookup returns what the RSL document at rawURL (absolute http(s)) gives.
// A fresh cached result is returned at once, an expired one with a
// document too while one background refresh runs; otherwise the caller
// waits for the one shared fetch of the URL, having passed ctx's cold gate
// (resolver.WithColdGate). The errors are ctx's (with resolver.ErrColdLimit
// when the gate gave no place in time) and ErrNotHTTP.
func (c *RSLCache) Lookup(ctx context.Context, rawURL string) (*RSLResult, error) {
	if _, _, err := splitRSL(rawURL); err != nil {
		return nil, err
	}
	res, err := c.rslDocs.Lookup(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("RSL document %s: %w", rawURL, err)
	}
	return res, nil
}

// Refetch fetches the document at rawURL now, whatever the cache and the
// shared store hold (an operator's refresh), caches the result and shares
// it; nil for a URL that is not absolute http(s).
func (c *RSLCache) Refetch(rawURL string) *RSLResult {
	if _, _, err := splitRSL(rawURL); err != nil {
		return nil
	}
	return c.rslDocs.Refetch(rawURL)
}

// splitRSL returns the origin and request-target of an absolute http(s) URL.
func splitRSL(rawURL string) (origin.Origin, string, error) {
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

// RSLStoreKey is the key under which a shared Store keeps the document at
// rawURL: a Store is keyed by origin, and a site may name several
// documents on one origin, so the key is an origin whose host is the
// URL's SHA-256 (under .rsl.invalid, a name no real origin has).
func RSLStoreKey(o origin.Origin, rawURL string) origin.Origin {
	sum := sha256.Sum256([]byte(rawURL))
	return origin.Origin{Scheme: o.Scheme, Host: hex.EncodeToString(sum[:]) + ".rsl.invalid", Port: o.Port}
}

// parseRSL reads a fetched body: a document, or why it is not one (a body
// cut at the fetch's bound is not judged as if it were whole).
func parseRSL(body []byte, truncated bool) (*rsl.Document, error) {
	if truncated {
		return nil, rsl.ErrTooLarge
	}
	return rsl.Parse(body)
}
