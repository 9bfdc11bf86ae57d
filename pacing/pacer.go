package pacing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	// DefaultPadding is added to every interval so that scheduling jitter
	// never brings two requests closer than the interval (see the package
	// documentation, Padding).
	DefaultPadding = 5 * time.Millisecond
	// DefaultCancelTimeout bounds giving back the slot of a request whose
	// client hung up.
	DefaultCancelTimeout = 500 * time.Millisecond
)

// Options configures New.
type Options struct {
	// Store holds the schedule; nil means a new Memory.
	Store Store
	// MaxWait is the longest a request is held in all (for a concurrency
	// permit and for its slot); a request that would wait longer is
	// refused at once (pacing.max_wait). 0 refuses every request that
	// would have to wait.
	MaxWait time.Duration
	// Padding is added to each interval; 0 means DefaultPadding, a
	// negative value none.
	Padding time.Duration
	// MaxConcurrency bounds the requests in flight per Request.Origin
	// (pacing.max_concurrency); 0 means unlimited. In this process, or
	// across a fleet with Shared.
	MaxConcurrency int
	// Shared, when set, holds the fleet's permits: a request needs one of
	// them besides one of this process (see concurrency.go).
	Shared ConcurrencyStore
	// CancelTimeout bounds Store.Cancel after a client hung up; 0 means
	// DefaultCancelTimeout.
	CancelTimeout time.Duration
	// LongestInterval is the longest Request.Interval this pacer is asked
	// for (pacing.max_delay, or the longest interval robots.txt and the
	// operator's floors can give); 0 means not known. A shared store then
	// takes a slot further ahead than LongestInterval + Padding + MaxWait
	// for corrupt (RedisOptions.MaxAhead). The store keeps the longest
	// bound any pacer built on it declared, so a new pacer with shorter
	// limits (after a reload) never resets slots reserved under the
	// earlier ones.
	LongestInterval time.Duration
	// Governor holds the origins' pauses (Request.PauseKey); nil: no
	// pauses.
	Governor *Governor
}

// aheadBounded is a Store that treats slots too far ahead as corrupt
// (Redis, and a Fallback around it).
type aheadBounded interface {
	raiseMaxAhead(d time.Duration)
}

// boundSlack is added to the corrupt bound a pacer declares: the stores
// round durations up to whole microseconds.
const boundSlack = time.Second

// Pacer holds requests until their slot. It is safe for concurrent use.
type Pacer struct {
	store         Store
	maxWait       time.Duration
	padding       time.Duration
	cancelTimeout time.Duration
	limit         *limiter // nil: no concurrency limit
	gates         gates
	governor      *Governor
	shared        ConcurrencyStore
}

// New returns a Pacer for opts.
func New(opts Options) *Pacer {
	p := &Pacer{
		store:         opts.Store,
		maxWait:       max(opts.MaxWait, 0),
		padding:       max(orDefault(opts.Padding, DefaultPadding), 0),
		cancelTimeout: orDefault(opts.CancelTimeout, DefaultCancelTimeout),
		governor:      opts.Governor,
		shared:        opts.Shared,
	}
	if p.store == nil {
		p.store = NewMemory(MemoryOptions{})
	}
	if opts.MaxConcurrency > 0 {
		p.limit = newLimiter(opts.MaxConcurrency)
	}
	if b, ok := p.store.(aheadBounded); ok && opts.LongestInterval > 0 {
		b.raiseMaxAhead(clampInterval(opts.LongestInterval+p.padding) + clampWait(p.maxWait) + boundSlack)
	}
	return p
}

// Store returns the pacer's store (for Pending, /explain).
func (p *Pacer) Store() Store { return p.store }

// Limited reports whether the pacer limits concurrency per origin, so that
// every request needs Acquire, paced or not.
func (p *Pacer) Limited() bool { return p.limit != nil }

// Request describes what Acquire paces.
type Request struct {
	// Key names the schedule (e.g. origin + robots.txt group).
	Key string
	// Interval is the spacing asked for (after Limits.Interval); 0 or less
	// means the request is not paced.
	Interval time.Duration
	// Origin names the concurrency limit's key; "" means no limit for this
	// request.
	Origin string
	// PauseKey names the origin whose pauses hold the request (the
	// Governor's key); "" means pauses do not apply to it.
	PauseKey string
}

// Permit is a request allowed to start. Call Sent when a paced request
// has been written to the origin, and Release when the request is done,
// whatever became of it (both no-ops where there is nothing to do). Until
// one of them is called, the next paced request of its key waits.
type Permit struct {
	// Waited is how long the request was held (X-Robotsgate-Wait), all
	// causes together.
	Waited time.Duration
	// Paused is the part of Waited the request was held for its origin's
	// pause, and Pause that pause (the last one, if several).
	Paused time.Duration
	Pause  Pause
	held   *heldPermit
	ticket *ticket // a paced request's passage through its key's gate
	probe  *Probe  // the request goes first after its origin's pause
}

// Sent records that the request has been written to the origin (its
// headers), now: the next paced request of its key may go an interval
// from now. Calls after the first, and after Release, do nothing.
func (p Permit) Sent() {
	if p.ticket != nil {
		p.ticket.leave(time.Now())
	}
}

// Answered records that the origin answered the request (its response's
// header), to be called after the Governor observed that answer: when
// the request was its origin's probe after a pause, and no new pause
// began since it went, the requests waiting for its answer go. Without
// Answered, Release ends the probe as unanswered (the next request
// becomes the probe).
func (p Permit) Answered() { p.probe.end(true) }

// heldPermit is a concurrency permit; released at most once. fleet is
// the fleet's permit it holds too, if any.
type heldPermit struct {
	limit    *limiter
	origin   string
	released atomic.Bool
	fleet    *fleetPermit
}

// Release returns the concurrency permit, if any, and ends the request's
// probe unanswered when Answered was not called. Calling it again, or on
// a zero Permit, does nothing.
func (p Permit) Release() {
	if p.ticket != nil {
		// Not known to be sent (or failed before): counting it as sent now
		// errs on the side of the origin.
		p.ticket.leave(time.Now())
	}
	p.probe.end(false)
	if h := p.held; h != nil && h.released.CompareAndSwap(false, true) {
		h.fleet.give()
		h.limit.release(h.origin)
	}
}

// Acquire holds the caller until req may start, first come, first served.
// While req.PauseKey's origin is paused it waits for the pause to end
// (before anything else, and again after its slot); after a pause one
// request goes first as the probe and the others wait for its answer
// (probe.go). With a concurrency limit it then takes a permit for
// req.Origin (waiting in line at most MaxWait); then, for a paced
// request, it reserves a slot of req.Interval + Padding on req.Key within
// the rest of MaxWait and sleeps until the slot; last, it waits until
// the previous request of req.Key in this process has been sent
// (Permit.Sent) and the interval has passed since (see gate.go).
//
// Errors: a *RefusedError (errors.Is ErrRateLimited) when the wait would
// exceed MaxWait, nothing reserved; a *PausedError (errors.Is ErrPaused)
// when the origin's pause lasts beyond MaxWait (or the answer to its
// probe does not come within it); the store's error (an *UnavailableError
// for a failing shared store under the refuse policy), nothing held; ctx's
// error (errors.Is context.Canceled or DeadlineExceeded) when the caller
// gave up while held, in which case Acquire returns promptly, its permit is
// released and its slot given back as far as that is safe (Store.Cancel).
// On error the Permit is zero and needs no Release.
func (p *Pacer) Acquire(ctx context.Context, req Request) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return Permit{}, fmt.Errorf("pacing: %s: %w", req.Key, err)
	}
	var paused Permit
	if err := p.waitPause(ctx, req.PauseKey, &paused, true); err != nil {
		return Permit{}, err
	}
	permit, err := p.acquirePermit(ctx, req.Origin, p.maxWait-paused.Waited)
	if err != nil {
		paused.probe.end(false)
		return Permit{}, err
	}
	permit.Waited, permit.Paused, permit.Pause = permit.Waited+paused.Waited, paused.Paused, paused.Pause
	permit.probe = paused.probe
	if req.Interval <= 0 {
		return permit, nil
	}
	held, err := p.hold(ctx, req.Key, req.Interval+p.padding, p.maxWait-permit.Waited)
	if err != nil {
		permit.Release()
		return Permit{}, err
	}
	permit.Waited += held
	// A pause may have begun while the request waited for its slot. It
	// waits for that pause but not for a probe: holding a concurrency
	// permit, it could hold up the probe, and its slot and the gate keep
	// it an interval from the others.
	if err := p.waitPause(ctx, req.PauseKey, &permit, false); err != nil {
		permit.Release()
		return Permit{}, err
	}
	t, waited, err := p.gates.enter(ctx, req.Key, req.Interval+p.padding, p.maxWait-permit.Waited)
	permit.Waited += waited
	if err != nil {
		permit.Release()
		return Permit{}, fmt.Errorf("pacing: %s: waiting for the previous request to be sent: %w", req.Key, err)
	}
	permit.ticket = t
	return permit, nil
}

// waitPause holds the caller while origin is paused, adding the wait to
// permit, within what is left of MaxWait: a pause that lasts longer is a
// *PausedError, at once. A pause that is lengthened while the caller
// waits is waited for too. After a pause the caller becomes the origin's
// probe (permit.probe), or waits for the probe's answer (probe.go), when
// join; one not answered within what is left of MaxWait is a
// *PausedError too.
func (p *Pacer) waitPause(ctx context.Context, origin string, permit *Permit, join bool) error {
	if origin == "" {
		return nil
	}
	for {
		h := p.governor.admit(origin, permit.probe, join)
		var waited time.Duration
		switch {
		case h.paused:
			// On the governor's clock, which said the origin is paused: the
			// refusal's Retry-After is the time left of the pause.
			wait := h.pause.Until.Sub(p.governor.now())
			if wait > p.maxWait-permit.Waited {
				return fmt.Errorf("pacing: %s: %w", origin, &PausedError{Pause: h.pause, RetryAfter: wait})
			}
			if err := sleep(ctx, wait); err != nil {
				return fmt.Errorf("pacing: %s: client gone while the origin was paused: %w", origin, err)
			}
			waited = wait
		case h.wait != nil:
			start := time.Now()
			answered, err := waitDone(ctx, h.wait, p.maxWait-permit.Waited)
			if err != nil {
				return fmt.Errorf("pacing: %s: client gone while waiting for the answer to the probe after a pause: %w", origin, err)
			}
			if !answered {
				return fmt.Errorf("pacing: %s: the probe after a pause is not answered: %w", origin, &PausedError{Pause: h.pause, RetryAfter: probeRetry, Probing: true})
			}
			waited = time.Since(start)
		default:
			if h.probe != permit.probe {
				permit.probe.end(false)
				permit.probe = h.probe
			}
			return nil
		}
		permit.Waited += waited
		permit.Paused += waited
		permit.Pause = h.pause
	}
}

// waitDone waits for done within maxWait: false when maxWait passed
// first, ctx's error when it is done first.
func waitDone(ctx context.Context, done <-chan struct{}, maxWait time.Duration) (bool, error) {
	select {
	case <-done:
		return true, nil
	default:
	}
	if maxWait <= 0 {
		return false, nil
	}
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	select {
	case <-done:
		return true, nil
	case <-timer.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// acquirePermit takes a concurrency permit for origin when limited,
// waiting at most maxWait.
func (p *Pacer) acquirePermit(ctx context.Context, origin string, maxWait time.Duration) (Permit, error) {
	if p.limit == nil || origin == "" {
		return Permit{}, nil
	}
	waited, err := p.limit.acquire(ctx, origin, max(maxWait, 0))
	if err != nil {
		return Permit{}, fmt.Errorf("pacing: %s: concurrency permit after %v: %w", origin, waited.Round(time.Millisecond), err)
	}
	held := &heldPermit{limit: p.limit, origin: origin}
	if p.shared != nil {
		fleet, fleetWaited, err := p.takeFleet(ctx, origin, maxWait-waited)
		waited += fleetWaited
		if err != nil {
			p.limit.release(origin)
			return Permit{}, fmt.Errorf("pacing: %s: the fleet's concurrency permit after %v: %w", origin, waited.Round(time.Millisecond), err)
		}
		held.fleet = fleet
	}
	return Permit{Waited: waited, held: held}, nil
}

// hold reserves a slot on key and sleeps until it, returning the wait.
func (p *Pacer) hold(ctx context.Context, key string, interval, maxWait time.Duration) (time.Duration, error) {
	r, err := p.store.Reserve(ctx, key, interval, max(maxWait, 0))
	if err != nil {
		return 0, fmt.Errorf("pacing: %s: %w", key, err)
	}
	if !r.Granted {
		return 0, fmt.Errorf("pacing: %s: %w", key, &RefusedError{Reason: ReasonSlot, Wait: r.Wait, RetryAfter: r.RetryAfter})
	}
	if err := sleep(ctx, r.Wait); err != nil {
		p.giveBack(ctx, key, r)
		return 0, fmt.Errorf("pacing: %s: client gone while held for %v: %w", key, r.Wait.Round(time.Millisecond), err)
	}
	return r.Wait, nil
}

// giveBack cancels r after its caller gave up, bounded by CancelTimeout.
// A failure only leaves the slot consumed, which is safe.
func (p *Pacer) giveBack(ctx context.Context, key string, r Reservation) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cancelTimeout)
	defer cancel()
	_ = p.store.Cancel(ctx, key, r)
}

// sleep waits for d or until ctx is done, whichever comes first; it
// returns ctx's error in the latter case. Its timer is stopped on return.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Limits are the operator's bounds on the interval asked by robots.txt
// (pacing.default_delay, pacing.max_delay, pacing.over_max_delay).
type Limits struct {
	// Floor is the least interval, applied where robots.txt asks for less
	// or nothing.
	Floor time.Duration
	// Max caps the interval; 0 means no cap.
	Max time.Duration
	// RefuseOverMax refuses requests to origins asking for more than Max
	// instead of pacing them at Max (clamp).
	RefuseOverMax bool
}

// ErrOverMaxDelay is matched (errors.Is) by the error of Limits.Interval
// for an interval above the cap under RefuseOverMax.
var ErrOverMaxDelay = errors.New("pacing: crawl delay above pacing.max_delay")

// Interval returns the interval to pace at when robots.txt asks for asked
// (the larger of crawl-delay and request-rate's period/n; 0 if none):
// max(asked, Floor), capped at Max. Above Max with RefuseOverMax it returns
// a *RefusedError (ReasonOverMaxDelay, RetryAfter = asked: a client should
// not come back sooner) that also matches ErrOverMaxDelay.
func (l Limits) Interval(asked time.Duration) (time.Duration, error) {
	d := max(asked, l.Floor, 0)
	if l.Max <= 0 || d <= l.Max {
		return d, nil
	}
	if l.RefuseOverMax {
		return 0, &RefusedError{Reason: ReasonOverMaxDelay, Wait: asked, RetryAfter: asked}
	}
	return l.Max, nil
}
