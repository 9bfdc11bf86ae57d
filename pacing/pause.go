package pacing

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// An origin that answers that it is overloaded (429, 503, or another
// configured status) is paused: no request of any pacing key of that
// origin starts before the pause ends. So is one that fails (500, 502,
// 504, a timeout) FailuresInARow times in a row: one broken URL does not
// pause a site. The pause lasts the answer's Retry-After, obeyed in full
// up to RetryAfterMax, or else follows an exponential series (Initial,
// times Factor for each further pausing answer in a row, plus up to
// MaxJitter, at most Max); a success, or Max without such an answer,
// starts the series (and the count of failures) again. The Governor keeps
// the pauses (and, for adaptive pacing, the origins' response times) in
// this process or, with a Shared store, across a fleet.

// MaxJitter is the largest share added at random to a pause of the
// series: the instances of a fleet, and the clients behind them, do not
// come back in step. It only lengthens a pause, never shortens it.
const MaxJitter = 0.1

// BackoffParams are pacing.backoff: which answers pause an origin and for
// how long when they say nothing of it.
type BackoffParams struct {
	// Enabled turns pauses on.
	Enabled bool
	// Statuses are the statuses that pause (429, 5xx).
	Statuses []int
	// ConnectionErrors also pauses an origin that could not be reached.
	ConnectionErrors bool
	// FailureStatuses (5xx), and FailureTimeouts (an answer that did not
	// come in time), pause an origin once FailuresInARow of them came in a
	// row; 0 counts none.
	FailureStatuses []int
	FailureTimeouts bool
	FailuresInARow  int
	// Initial, Factor and Max are the series without Retry-After.
	Initial time.Duration
	Factor  float64
	Max     time.Duration
	// RetryAfterMax caps a pause an answer's Retry-After asks for (at
	// least Max: a Retry-After is the origin's own word, not a computed
	// guess).
	RetryAfterMax time.Duration
}

// counts reports whether an answer counts towards a pause after
// FailuresInARow in a row.
func (p *BackoffParams) counts(a Answer) bool {
	if !p.Enabled || p.FailuresInARow <= 0 {
		return false
	}
	if a.ConnectionError {
		return a.Timeout && p.FailureTimeouts
	}
	return slices.Contains(p.FailureStatuses, a.Status)
}

// retryAfterCap is the bound of a pause a Retry-After asks for.
func (p *BackoffParams) retryAfterCap() time.Duration { return max(p.RetryAfterMax, p.Max) }

// pauses reports whether an answer pauses the origin.
func (p *BackoffParams) pauses(a Answer) bool {
	if !p.Enabled {
		return false
	}
	if a.ConnectionError {
		return p.ConnectionErrors
	}
	for _, s := range p.Statuses {
		if s == a.Status {
			return true
		}
	}
	return false
}

// AdaptiveParams are pacing.adaptive: an origin's interval is at least
// Factor times its recent response time, within Min and Max; Factor 0 is
// off.
type AdaptiveParams struct {
	Factor   float64
	Min, Max time.Duration
}

// Answer is what an origin answered a request, as the governor needs it.
type Answer struct {
	// Status is the response's status code; 0 with ConnectionError.
	Status int
	// RetryAfter and Date are the response's header fields, as sent.
	RetryAfter, Date string
	// ConnectionError: the origin could not be reached, or timed out.
	ConnectionError bool
	// Timeout: the connection error is that the origin did not answer (or
	// accept the connection) in time.
	Timeout bool
	// Latency is the time from sending the request to its response's
	// header; 0 when not measured.
	Latency time.Duration
	// At is when robotsgate received the answer.
	At time.Time
}

// Pause is an origin's pause and the answer that caused it (the last
// one, when several extended it).
type Pause struct {
	// Until is when requests may start again.
	Until time.Time
	// Status is the answer's status, 0 for a connection error.
	Status int
	// RetryAfter is the answer's Retry-After as sent, "" when none (the
	// pause then followed the series).
	RetryAfter string
	// At is when robotsgate received the answer.
	At time.Time
	// Streak counts the pausing answers in a row.
	Streak int
	// Failures counts the failures in a row when a failure paused the
	// origin (FailuresInARow or more); 0 for the other pauses.
	Failures int
}

// Active reports whether the pause is not over at now.
func (p Pause) Active(now time.Time) bool { return now.Before(p.Until) }

// Cause says why requests wait, for a refusal, a log line and the audit
// record: "the origin answered 503 with Retry-After: 120 at
// 10:42:07Z".
func (p Pause) Cause() string {
	what := "answered " + strconv.Itoa(p.Status)
	if p.Status == 0 {
		what = "could not be reached"
	}
	if p.Status == 0 && p.Failures > 0 {
		what = "did not answer in time"
	}
	if p.RetryAfter != "" {
		what += " with Retry-After: " + clipHeader(p.RetryAfter)
	}
	switch {
	case p.Failures > 0:
		what += fmt.Sprintf(" (%d failures in a row)", p.Failures)
	case p.RetryAfter == "" && p.Streak > 1:
		what += fmt.Sprintf(" (%d times in a row)", p.Streak)
	}
	return "the origin " + what + " at " + p.At.UTC().Format("15:04:05Z")
}

// Label names the cause for a metric: the status, or "connection".
func (p Pause) Label() string {
	if p.Status == 0 {
		return "connection"
	}
	return strconv.Itoa(p.Status)
}

// clipHeader keeps a header value printable and short in a message.
func clipHeader(v string) string {
	v = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, v)
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return v
}

// retryAfter reads a Retry-After (RFC 9110 §10.2.3): delta-seconds, or an
// HTTP-date counted from the response's Date when it has one (so that
// the origin's clock and ours need not agree), else from at. ok is false
// for a missing or unreadable value, or one that asks for no wait.
func retryAfter(value, date string, at time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs <= 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(MaxInterval/time.Second))) * time.Second, true
	}
	when, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	if now, err := http.ParseTime(date); err == nil {
		at = now
	}
	d := when.Sub(at)
	return d, d > 0
}

// step is the pause arithmetic, the same in memory and in Redis: after an
// earlier series of streak answers, the last at last, an answer at now
// continues the series (streak+1) when it came within params.Max of the
// last one, else starts it again; the pause is the answer's Retry-After
// (ra, when hasRA) up to RetryAfterMax, or the series' term with jitter (0
// to MaxJitter), at most Max. The pause never shortens an earlier one
// (until).
func step(prev Pause, now time.Time, ra time.Duration, hasRA bool, params *BackoffParams, jitter float64) (time.Duration, int) {
	streak := 1
	if prev.Streak > 0 && now.Sub(prev.At) < params.Max {
		streak = prev.Streak + 1
	}
	if hasRA {
		return min(ra, params.retryAfterCap()), streak
	}
	return min(seriesTerm(params, streak, jitter), params.Max), streak
}

// seriesTerm is the pause of the streak-th answer in a row without
// Retry-After: Initial × Factor^(streak-1), lengthened by jitter.
func seriesTerm(params *BackoffParams, streak int, jitter float64) time.Duration {
	d := float64(params.Initial) * math.Pow(max(params.Factor, 1), float64(streak-1))
	d *= 1 + min(max(jitter, 0), MaxJitter)
	if d >= float64(params.Max) || math.IsInf(d, 0) {
		return params.Max
	}
	return time.Duration(d)
}

// ErrPaused is matched (errors.Is) by every *PausedError.
var ErrPaused = errors.New("pacing: origin paused")

// PausedError is returned for a request whose origin is paused further
// ahead than its wait may last: the proxy answers 429 origin-backoff with
// Retry-After RetryAfterSeconds(RetryAfter).
type PausedError struct {
	Pause      Pause
	RetryAfter time.Duration
	// Probing: the pause is over but the answer to the request sent first
	// after it (the probe) did not come within the wait.
	Probing bool
}

// Error describes the refusal.
func (e *PausedError) Error() string {
	if e.Probing {
		return "origin paused until its probe is answered: " + e.Pause.Cause()
	}
	return fmt.Sprintf("origin paused until %s: %s", e.Pause.Until.UTC().Format(time.RFC3339), e.Pause.Cause())
}

// Unwrap makes errors.Is(err, ErrPaused) true.
func (e *PausedError) Unwrap() error { return ErrPaused }
