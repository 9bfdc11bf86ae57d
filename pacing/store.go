package pacing

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxInterval is the longest interval a store reserves; longer intervals are
// shortened to it. A year keeps every store's arithmetic far from overflow
// (nanoseconds in memory, microseconds as Lua numbers in Redis) and is
// longer than any pacing.max_wait that makes sense, so a request paced at
// the cap is refused exactly like one paced at the real interval would be.
const MaxInterval = 365 * 24 * time.Hour

// Store holds the pacing schedule of many keys. Implementations are safe
// for concurrent use.
type Store interface {
	// Reserve asks for the next slot of key: slot = max(now, next). If
	// slot - now <= maxWait the slot is granted and next becomes
	// slot + interval; otherwise the request is refused and nothing
	// changes. Reservations on one key are atomic and first come, first
	// served. interval is clamped to [0, MaxInterval], a negative maxWait
	// counts as 0. An error means the store could not answer (only shared
	// stores fail; they return an *UnavailableError); the reservation may
	// or may not have been made, which can only delay later requests.
	Reserve(ctx context.Context, key string, interval, maxWait time.Duration) (Reservation, error)

	// Cancel gives back a granted reservation that will not be used. It
	// rolls key's next back to r's slot only if no reservation was made on
	// key after r (see the package documentation, Cancellation); otherwise
	// it does nothing. Cancelling a refused reservation, or one of
	// interval 0, does nothing. Each reservation may be cancelled at most
	// once, and only while its slot has not been used.
	Cancel(ctx context.Context, key string, r Reservation) error

	// Pending reports how long from now until key's next free slot: the
	// wait a request would get if it reserved now, 0 for an idle key.
	Pending(ctx context.Context, key string) (time.Duration, error)
}

// Reservation is a store's answer to Reserve.
type Reservation struct {
	// Granted is true when a slot was reserved; the caller should start
	// after Wait. False means refused: the slot was further than maxWait
	// away and nothing was reserved.
	Granted bool
	// Wait is slot - now, measured on the store's clock when the
	// reservation was made: how long the caller must hold the request (or,
	// when refused, how long it would have had to).
	Wait time.Duration
	// RetryAfter is set when refused: how long until a new request would be
	// granted a slot within maxWait, Wait - maxWait, if nobody reserves
	// meanwhile. Use RetryAfterSeconds for the HTTP header.
	RetryAfter time.Duration

	// token is next as this reservation set it and slot its slot, both in
	// the store's own clock and unit; Cancel compares and rolls back with
	// them. local marks a Fallback reservation made by the local store.
	token, slot int64
	local       bool
}

// decide is the reservation arithmetic of the memory store (the Redis script
// mirrors it): now and next are times, interval and maxWait durations, all
// in nanoseconds. A granted reservation carries the new next as its token.
func decide(now, next, interval, maxWait int64) Reservation {
	slot := max(now, next)
	wait := slot - now
	if wait > maxWait {
		return Reservation{Wait: time.Duration(wait), RetryAfter: time.Duration(wait - maxWait)}
	}
	return Reservation{Granted: true, Wait: time.Duration(wait), token: slot + interval, slot: slot}
}

// clampInterval limits interval to [0, MaxInterval].
func clampInterval(interval time.Duration) time.Duration {
	return min(max(interval, 0), MaxInterval)
}

// clampWait limits maxWait to [0, MaxInterval].
func clampWait(maxWait time.Duration) time.Duration {
	return min(max(maxWait, 0), MaxInterval)
}

// RetryAfterSeconds renders d for a Retry-After header: whole seconds,
// rounded up, at least 1 (a client told 0 would retry at once).
func RetryAfterSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// ErrRateLimited is matched (errors.Is) by every *RefusedError.
var ErrRateLimited = errors.New("pacing: rate limited")

// ErrUnavailable is matched (errors.Is) by every *UnavailableError.
var ErrUnavailable = errors.New("pacing: store unavailable")

// Reasons of a RefusedError.
const (
	// ReasonSlot: the request's slot lay further ahead than maxWait.
	ReasonSlot = "slot"
	// ReasonConcurrency: no concurrency permit for the origin came free
	// within maxWait.
	ReasonConcurrency = "concurrency"
	// ReasonOverMaxDelay: robots.txt asks for an interval above
	// pacing.max_delay and over_max_delay is refuse.
	ReasonOverMaxDelay = "over-max-delay"
)

// RefusedError is returned when a request is not held but refused: the
// proxy answers 429 with a Retry-After header of
// RetryAfterSeconds(RetryAfter).
type RefusedError struct {
	// Reason is one of ReasonSlot, ReasonConcurrency, ReasonOverMaxDelay.
	Reason string
	// Wait is how long the request would have had to wait (ReasonSlot) or
	// the interval asked for (ReasonOverMaxDelay).
	Wait time.Duration
	// RetryAfter is when a retry may succeed (see Reservation.RetryAfter).
	RetryAfter time.Duration
}

// Error describes the refusal.
func (e *RefusedError) Error() string {
	if e.Reason == ReasonOverMaxDelay {
		return fmt.Sprintf("rate limited (%s): robots.txt asks for %v between requests, more than pacing.max_delay", e.Reason, e.Wait)
	}
	return fmt.Sprintf("rate limited (%s): would wait %v, retry after %v", e.Reason, e.Wait, e.RetryAfter)
}

// Unwrap makes errors.Is(err, ErrRateLimited) true.
func (e *RefusedError) Unwrap() error { return ErrRateLimited }

// Is makes errors.Is(err, ErrOverMaxDelay) true for ReasonOverMaxDelay.
func (e *RefusedError) Is(target error) bool {
	return target == ErrOverMaxDelay && e.Reason == ReasonOverMaxDelay
}

// UnavailableError is returned when the shared store cannot answer (Redis
// down, frozen or erroring) and the policy is to refuse: the proxy answers
// 503 with a Retry-After header of RetryAfterSeconds(RetryAfter).
type UnavailableError struct {
	// Op is the store operation that failed ("reserve", "cancel", ...).
	Op string
	// RetryAfter is when the store will be tried again.
	RetryAfter time.Duration
	// Err is the underlying failure.
	Err error
}

// Error describes the failure.
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("store unavailable (%s): %v", e.Op, e.Err)
}

// Unwrap returns both ErrUnavailable and the underlying error, so errors.Is
// matches either.
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }
