package pacing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// OnError is the policy of a Fallback while its primary store fails
// (pacing.on_store_error).
type OnError string

// The policies.
const (
	// OnErrorRefuse answers paced requests with an *UnavailableError (503
	// + Retry-After).
	OnErrorRefuse OnError = "refuse"
	// OnErrorLocal paces in this process until the primary is back.
	OnErrorLocal OnError = "local"
)

// DefaultProbeInterval is the default FallbackOptions.ProbeInterval.
const DefaultProbeInterval = time.Second

// FallbackOptions configures NewFallback.
type FallbackOptions struct {
	// OnError is the policy while the primary fails; "" means
	// OnErrorRefuse.
	OnError OnError
	// Local is the store used by OnErrorLocal; nil means a new Memory.
	Local *Memory
	// ProbeInterval is how long the primary is left alone after a failure
	// before one request tries it again. Default DefaultProbeInterval.
	ProbeInterval time.Duration
	// OnFailure, if set, is called with the error of every call on the
	// primary that fails (a caller's cancellation is not a failure): the
	// first failure, then one per probe while the primary stays down.
	OnFailure func(error)
}

// Fallback is a Store that uses a primary (shared) store and, while that
// fails, applies the OnError policy. It is a small circuit breaker: the
// first failure opens it, and for ProbeInterval every request is answered
// by the policy at once; then a single request probes the primary (the
// others still get the policy) and its success closes the breaker. So a
// frozen Redis costs one timeout per ProbeInterval instead of one per
// request, a recovering Redis is not stampeded, and recovery needs no
// action: at most ProbeInterval after Redis answers again, pacing is shared
// again. A cancelled caller context is not counted as a failure.
//
// With OnErrorLocal the changeover keeps this process's own spacing in
// both directions: every reservation the primary grants is also recorded
// (not reserved) in the local store, so local pacing starts from them; and
// while reservations made locally may still be pending, reservations on
// the primary are made no earlier than the local schedule of their key.
// Other proxies' reservations are not known locally, so during an outage a
// fleet paces per process (that is what "local" means).
type Fallback struct {
	primary Store
	floored flooredReserver // primary, when it accepts a floor
	local   *Memory         // nil with OnErrorRefuse
	probe   int64
	base    time.Time

	openUntil  atomic.Int64 // 0: closed; else when to probe (ns since base)
	probing    atomic.Bool  // a probe is in flight
	localUntil atomic.Int64 // local reservations may be pending until then
	lastErr    atomic.Pointer[error]
	onFailure  func(error)
}

// flooredReserver is a Store that can reserve a slot no earlier than floor
// from now (Redis does).
type flooredReserver interface {
	reserve(ctx context.Context, key string, interval, maxWait, floor time.Duration) (Reservation, error)
}

// NewFallback wraps primary with the policy in opts.
func NewFallback(primary Store, opts FallbackOptions) (*Fallback, error) {
	if primary == nil {
		return nil, errors.New("pacing: fallback: no primary store")
	}
	f := &Fallback{primary: primary, base: time.Now(), onFailure: opts.OnFailure}
	f.floored, _ = primary.(flooredReserver)
	f.probe = int64(orDefault(opts.ProbeInterval, DefaultProbeInterval))
	switch opts.OnError {
	case OnErrorRefuse, "":
	case OnErrorLocal:
		f.local = opts.Local
		if f.local == nil {
			f.local = NewMemory(MemoryOptions{})
		}
	default:
		return nil, fmt.Errorf("pacing: fallback: unknown on_store_error %q (want refuse or local)", opts.OnError)
	}
	return f, nil
}

// Reserve implements Store: on the primary while it works, else by the
// policy (see Fallback). With OnErrorRefuse the error is an
// *UnavailableError whose RetryAfter is the time until the next probe.
func (f *Fallback) Reserve(ctx context.Context, key string, interval, maxWait time.Duration) (Reservation, error) {
	use, probe := f.usePrimary()
	if !use {
		return f.degradedReserve(ctx, key, interval, maxWait)
	}
	start := time.Now()
	r, err := f.primaryReserve(ctx, key, interval, maxWait)
	if err = f.outcome(ctx, probe, err); err != nil {
		if ctx.Err() != nil {
			return Reservation{}, err
		}
		// The time lost on the failing primary counts against maxWait.
		return f.degradedReserve(ctx, key, interval, maxWait-time.Since(start))
	}
	f.mirror(key, r, interval)
	return r, nil
}

// Cancel implements Store on the store that made r. A reservation on the
// primary is left consumed (which is safe) while the breaker is open.
func (f *Fallback) Cancel(ctx context.Context, key string, r Reservation) error {
	if r.local {
		return f.local.Cancel(ctx, key, r)
	}
	if f.openUntil.Load() != 0 {
		return nil
	}
	return f.outcome(ctx, false, f.primary.Cancel(ctx, key, r))
}

// Pending implements Store on the primary while it works, else on the
// local store (OnErrorLocal) or with an *UnavailableError (OnErrorRefuse).
func (f *Fallback) Pending(ctx context.Context, key string) (time.Duration, error) {
	use, probe := f.usePrimary()
	if use {
		d, err := f.primary.Pending(ctx, key)
		if err = f.outcome(ctx, probe, err); err == nil || ctx.Err() != nil {
			return d, err
		}
	}
	if f.local == nil {
		return 0, f.unavailable("pending")
	}
	return f.local.Pending(ctx, key)
}

// Healthy reports whether the primary answers now, if it can tell (it has a
// Healthy method, as Redis has); nil otherwise. It does not change the
// breaker.
func (f *Fallback) Healthy(ctx context.Context) error {
	if h, ok := f.primary.(interface{ Healthy(context.Context) error }); ok {
		return h.Healthy(ctx)
	}
	return nil
}

// raiseMaxAhead passes a pacer's corrupt bound on to the primary, when it
// has one (see Options.LongestInterval).
func (f *Fallback) raiseMaxAhead(d time.Duration) {
	if b, ok := f.primary.(aheadBounded); ok {
		b.raiseMaxAhead(d)
	}
}

// Degraded reports whether the breaker is open: requests are answered by
// the OnError policy, not by the primary.
func (f *Fallback) Degraded() bool { return f.openUntil.Load() != 0 }

// now is the breaker's clock, monotonic nanoseconds since creation.
func (f *Fallback) now() int64 { return int64(time.Since(f.base)) }

// usePrimary says whether this call goes to the primary and whether it is
// the probe of an open breaker.
func (f *Fallback) usePrimary() (use, probe bool) {
	until := f.openUntil.Load()
	switch {
	case until == 0:
		return true, false
	case f.now() < until:
		return false, false
	case f.probing.CompareAndSwap(false, true):
		return true, true
	default:
		return false, false
	}
}

// outcome updates the breaker with the result of a call on the primary and
// returns err, wrapped with ctx's error when the caller gave up (which does
// not count as a failure).
func (f *Fallback) outcome(ctx context.Context, probe bool, err error) error {
	if probe {
		defer f.probing.Store(false)
	}
	switch {
	case err == nil:
		f.openUntil.Store(0)
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("pacing: fallback: %w (%w)", ctx.Err(), err)
	default:
		f.lastErr.Store(&err)
		f.openUntil.Store(f.now() + f.probe)
		if f.onFailure != nil {
			f.onFailure(err)
		}
		return err
	}
}

// primaryReserve reserves on the primary, no earlier than the local
// schedule while local reservations may be pending.
func (f *Fallback) primaryReserve(ctx context.Context, key string, interval, maxWait time.Duration) (Reservation, error) {
	if f.floored == nil || f.local == nil || f.now() >= f.localUntil.Load() {
		return f.primary.Reserve(ctx, key, interval, maxWait)
	}
	floor, _ := f.local.Pending(ctx, key)
	return f.floored.reserve(ctx, key, interval, maxWait, floor)
}

// mirror records a slot the primary granted in the local store.
func (f *Fallback) mirror(key string, r Reservation, interval time.Duration) {
	if f.local != nil && r.Granted {
		f.local.raise(key, r.Wait+clampInterval(interval))
	}
}

// degradedReserve answers a reservation by the policy.
func (f *Fallback) degradedReserve(ctx context.Context, key string, interval, maxWait time.Duration) (Reservation, error) {
	if f.local == nil {
		return Reservation{}, f.unavailable("reserve")
	}
	r, err := f.local.Reserve(ctx, key, interval, maxWait)
	if r.Granted {
		r.local = true
		f.noteLocal(f.now() + int64(r.Wait+clampInterval(interval)))
	}
	return r, err
}

// noteLocal raises localUntil to t.
func (f *Fallback) noteLocal(t int64) {
	for {
		cur := f.localUntil.Load()
		if cur >= t || f.localUntil.CompareAndSwap(cur, t) {
			return
		}
	}
}

// unavailable is the refusal of OnErrorRefuse: retry when the breaker will
// probe again.
func (f *Fallback) unavailable(op string) error {
	var err error = errors.New("shared store failing")
	if p := f.lastErr.Load(); p != nil {
		err = *p
	}
	retry := time.Duration(f.openUntil.Load() - f.now())
	var ue *UnavailableError
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &UnavailableError{Op: op, RetryAfter: max(retry, 0), Err: err}
}
