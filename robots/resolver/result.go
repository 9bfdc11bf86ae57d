package resolver

import (
	"cmp"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/robotsgate/robotsgate/egress"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
)

// Status says what an origin's robots.txt means right now (RFC 9309 §2.3.1).
type Status uint8

const (
	// OK: a robots.txt was fetched (2xx) and File holds its rules.
	OK Status = iota + 1
	// Unavailable: 4xx other than 429 and 407, or redirects that could not
	// be followed (more than five, a loop): everything is allowed.
	Unavailable
	// Unreachable: 429, 5xx, 407 (a proxy's refusal, not the origin's
	// answer), a timeout, a network, DNS, TLS or egress failure, with no
	// earlier copy to fall back on: everything is disallowed.
	Unreachable
)

var statusNames = [...]string{OK: "ok", Unavailable: "unavailable", Unreachable: "unreachable"}

// String returns "ok", "unavailable" or "unreachable".
func (s Status) String() string {
	if int(s) < len(statusNames) && statusNames[s] != "" {
		return statusNames[s]
	}
	return "unknown"
}

// Result is the robots.txt that applies to an origin, or the verdict that
// stands in for it, with where it came from and how old it is. Results are
// shared between requests and must not be modified or copied; a refresh
// replaces the whole Result in the cache.
type Result struct {
	// File holds the rules when Status is OK, possibly from an expired copy
	// (Stale) kept while the origin is unreachable; nil otherwise.
	File *robots.File
	// HTTPStatus is the status code of the response the verdict rests on,
	// 0 when there was none (a network failure).
	HTTPStatus int
	Status     Status
	// Stale reports that File is an expired copy used because the latest
	// attempt failed (Err says how).
	Stale bool

	// The fields below keep a Result at 80 bytes, a size class: a cache
	// holds a hundred thousand of them. The origin is kept as its parts
	// (Origin) because a Scheme string and a padded Port cost 24 bytes more.
	https      bool
	refreshing atomic.Bool // a background refresh is under way (cache bookkeeping)
	port       uint16
	failures   uint16 // consecutive failed attempts, for backoff
	host       string
	// Unix nanoseconds.
	fetchedAt, expires int64
	promoted           atomic.Int64 // the last LRU promotion
	// detail is set only for a verdict that rests on an error or a redirect.
	detail *detail
}

// size is what r keeps on the heap: itself, its host, its detail and its
// parsed file (robots.File.Size), for the cache's byte bound.
func (r *Result) size() int64 {
	n := int64(unsafe.Sizeof(*r)) + int64(len(r.host)) + r.File.Size()
	if d := r.detail; d != nil {
		n += int64(unsafe.Sizeof(*d)) + int64(len(d.redirectedTo)+len(d.sha256)+len(d.etag)+len(d.lastModified))
		if d.err != nil {
			n += int64(len(d.err.Error())) // about what an error keeps
		}
	}
	return n
}

// detail is what few Results need.
type detail struct {
	err error
	// redirectedTo is where the robots.txt was finally read when that is
	// not Origin.RobotsURL(); empty otherwise.
	redirectedTo string
	// sha256 names the body the File was parsed from (kept when the
	// resolver archives, Config.OnAnswer); etag and lastModified are its
	// validators, for a conditional refresh.
	sha256, etag, lastModified string
}

// newResult returns a Result for o with the given verdict.
func newResult(o origin.Origin, status Status, httpStatus int) *Result {
	return &Result{Status: status, HTTPStatus: httpStatus, https: o.Scheme == "https", port: o.Port, host: o.Host}
}

// Origin returns the origin whose robots.txt this is.
func (r *Result) Origin() origin.Origin {
	scheme := "http"
	if r.https {
		scheme = "https"
	}
	return origin.Origin{Scheme: scheme, Host: r.host, Port: r.port}
}

// is reports whether r is o's.
func (r *Result) is(o origin.Origin) bool {
	return r.host == o.Host && r.port == o.Port && r.https == (o.Scheme == "https")
}

// Err returns why the latest attempt failed, for Unreachable and Stale
// (and Unavailable after a redirect loop or too many redirects), else nil.
func (r *Result) Err() error {
	if r.detail == nil {
		return nil
	}
	return r.detail.err
}

// Causes of robots.txt failures besides egress.Cause's network ones.
const (
	CauseTooManyRedirects = "too_many_redirects" // more than five, or a loop (Unavailable)
	CauseHTTP429          = "http_429"
	CauseHTTP5xx          = "http_5xx"
	CauseHTTP407          = "http_407" // a parent proxy refused robotsgate's credentials
	CauseHTTP1xx          = "http_1xx"
)

// Cause names why the latest fetch did not give a file: a network cause
// (egress.Cause: dns_error, connection_refused, connection_timeout,
// tls_certificate_error, ...), an HTTP status (http_429, http_5xx,
// http_407) or too_many_redirects; "" when it did, or when the answer
// was a plain 4xx (no robots.txt: everything allowed).
func (r *Result) Cause() string { return CauseOf(r.Err()) }

// CauseOf names the failure err of a fetch as Result.Cause does ("" for
// nil), for the caches of other files (FetchFile).
func CauseOf(err error) string {
	var se *StatusError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errTooManyRedirects), errors.Is(err, errRedirectLoop):
		return CauseTooManyRedirects
	case errors.As(err, &se) && se.Code == http.StatusTooManyRequests:
		return CauseHTTP429
	case errors.As(err, &se) && se.Code == http.StatusProxyAuthRequired:
		return CauseHTTP407
	case errors.As(err, &se) && se.Code >= 500:
		return CauseHTTP5xx
	case errors.As(err, &se):
		return CauseHTTP1xx
	}
	return egress.Cause(err)
}

// Failures returns how many fetches in a row have failed (0 after a
// success): 1 starts a failure streak.
func (r *Result) Failures() int { return int(r.failures) }

// setDetail records err and where the robots.txt was read (for a redirect).
func (r *Result) setDetail(err error, url string) {
	if url == r.Origin().RobotsURL() {
		url = ""
	}
	if err != nil || url != "" {
		r.detail = &detail{err: err, redirectedTo: url}
	}
}

// setBody records what identifies the file's body: its SHA-256 and its
// validators (any may be "").
func (r *Result) setBody(sha256, etag, lastModified string) {
	if sha256 == "" && etag == "" && lastModified == "" {
		return
	}
	if r.detail == nil {
		r.detail = &detail{}
	}
	r.detail.sha256, r.detail.etag, r.detail.lastModified = sha256, etag, lastModified
}

// SHA256 returns the hex SHA-256 of the body the File was parsed from,
// when the resolver archives (Config.OnAnswer), else "".
func (r *Result) SHA256() string {
	if r.detail == nil {
		return ""
	}
	return r.detail.sha256
}

// validators returns the ETag and Last-Modified of the file's answer.
func (r *Result) validators() (etag, lastModified string) {
	if r.detail == nil || r.File == nil {
		return "", ""
	}
	return r.detail.etag, r.detail.lastModified
}

// FetchedAt returns when the verdict was obtained.
func (r *Result) FetchedAt() time.Time { return time.Unix(0, r.fetchedAt) }

// Expires returns when the verdict stops being fresh: for OK and
// Unavailable the Cache-Control max-age (clamped to the configured bounds),
// for failures the time of the next retry.
func (r *Result) Expires() time.Time { return time.Unix(0, r.expires) }

// fresh reports whether the verdict is still fresh at now.
func (r *Result) fresh(now time.Time) bool { return now.UnixNano() < r.expires }

// staleCopy returns a new Result serving r's rules after a failed refresh.
func (r *Result) staleCopy(err error, failures uint16, expires time.Time) *Result {
	c := newResult(r.Origin(), r.Status, r.HTTPStatus)
	c.File, c.Stale, c.failures = r.File, true, failures
	c.fetchedAt, c.expires = r.fetchedAt, expires.UnixNano()
	c.setDetail(err, r.URL())
	c.setBody(r.SHA256(), "", "") // the body judged; no revalidation of a failed origin's copy
	return c
}

// withoutValidators returns a copy of r that asks no conditional fetch
// (an operator's refetch must get the body, not a 304), keeping its file
// as the copy to fall back on.
func (r *Result) withoutValidators() *Result {
	c := newResult(r.Origin(), r.Status, r.HTTPStatus)
	c.File, c.Stale, c.failures, c.fetchedAt, c.expires = r.File, r.Stale, r.failures, r.fetchedAt, r.expires
	c.setDetail(r.Err(), r.URL())
	c.setBody(r.SHA256(), "", "")
	return c
}

// revalidated returns a copy of r confirmed by a 304: the same file and
// body, fresh from now until expires, with the answer's validators where
// it gave new ones.
func (r *Result) revalidated(now, expires time.Time, etag, lastModified string) *Result {
	c := newResult(r.Origin(), r.Status, r.HTTPStatus)
	c.File = r.File
	c.fetchedAt, c.expires = now.UnixNano(), expires.UnixNano()
	c.setDetail(nil, r.URL())
	oldTag, oldLM := r.validators()
	c.setBody(r.SHA256(), cmp.Or(etag, oldTag), cmp.Or(lastModified, oldLM))
	return c
}

// Allowed reports whether the robots.txt lets the given group fetch target:
// the rules when there are some, everything for Unavailable, nothing for
// Unreachable. It is a convenience for callers that need only the verdict.
func (r *Result) Allowed(userAgent, target string) bool {
	switch {
	case r.File != nil:
		return r.File.GroupForUserAgent(userAgent).Decide(target).Allowed
	case r.Status == Unavailable:
		return true
	}
	return false
}

// URL returns where the robots.txt was finally read, after redirects.
func (r *Result) URL() string {
	if r.detail != nil && r.detail.redirectedTo != "" {
		return r.detail.redirectedTo
	}
	return r.Origin().RobotsURL()
}

// Age returns how long ago the verdict was obtained.
func (r *Result) Age(now time.Time) time.Duration { return now.Sub(r.FetchedAt()) }

// usable reports whether the result can keep serving requests while a
// refresh runs in the background.
func (r *Result) usable() bool { return r.File != nil || r.Status == Unavailable }
