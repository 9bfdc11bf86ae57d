package resolver

import (
	"time"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
)

// Status says what an origin's robots.txt means right now (RFC 9309 §2.3.1).
type Status uint8

const (
	// OK: a robots.txt was fetched (2xx) and File holds its rules.
	OK Status = iota + 1
	// Unavailable: 4xx other than 429, or redirects that could not be
	// followed (more than five, a loop): everything is allowed.
	Unavailable
	// Unreachable: 429, 5xx, a timeout, a network, DNS, TLS or egress
	// failure, with no earlier copy to fall back on: everything is disallowed.
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
// shared between requests and must not be modified.
type Result struct {
	Origin origin.Origin
	Status Status
	// File holds the rules when Status is OK, possibly from an expired copy
	// (Stale) kept while the origin is unreachable; nil otherwise.
	File *robots.File
	// HTTPStatus is the status code of the response the verdict rests on,
	// 0 when there was none (a network failure).
	HTTPStatus int
	// redirectedTo is where the robots.txt was finally read when that is not
	// Origin.RobotsURL() (redirects); empty otherwise, to keep cache entries
	// small.
	redirectedTo string
	// FetchedAt is when the verdict was obtained.
	FetchedAt time.Time
	// Expires is when the verdict stops being fresh: for OK and Unavailable
	// the Cache-Control max-age (clamped to the configured bounds), for
	// failures the time of the next retry.
	Expires time.Time
	// Stale reports that File is an expired copy used because the latest
	// attempt failed (Err says how).
	Stale bool
	// Err is why the latest attempt failed, for Unreachable and Stale.
	Err error

	failures int // consecutive failed attempts, for backoff
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
	if r.redirectedTo != "" {
		return r.redirectedTo
	}
	return r.Origin.RobotsURL()
}

// Age returns how long ago the verdict was obtained.
func (r *Result) Age(now time.Time) time.Duration { return now.Sub(r.FetchedAt) }

// usable reports whether the result can keep serving requests while a
// refresh runs in the background.
func (r *Result) usable() bool { return r.File != nil || r.Status == Unavailable }
