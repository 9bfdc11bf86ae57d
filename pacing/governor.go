package pacing

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Bounds of the governor's tables.
const (
	// MaxPausedOrigins bounds the origins whose pause (or series of
	// pausing answers) is remembered; beyond it those whose pauses end
	// first are forgotten, down to nine tenths of it.
	MaxPausedOrigins = 100_000
	// MaxTimedOrigins bounds the origins whose response times are kept
	// for adaptive pacing (least recently answered dropped).
	MaxTimedOrigins = 100_000
	// Samples is how many response times per origin the adaptive interval
	// takes the median of.
	Samples = 5
)

// sharedTimeout bounds each call to a Shared store: an answer is not
// delayed long by a slow Redis.
const sharedTimeout = time.Second

// Shared is where a fleet shares pauses and response times (Redis). A
// store that fails is only logged: the governor then pauses in this
// process alone.
type Shared interface {
	// Pause records a pausing answer for origin atomically with what other
	// instances recorded (the same arithmetic as step), tells the other
	// instances, and returns the origin's pause; failures is the count of
	// failures in a row that paused it (0: not a failure).
	Pause(ctx context.Context, origin string, a Answer, ra time.Duration, hasRA bool, params *BackoffParams, jitter float64, failures int) (Pause, error)
	// Fail counts a failure of origin (BackoffParams.counts) with those
	// the fleet counted, a new count when the last came params.Max or
	// more ago, tells the other instances, and returns the failures in a
	// row.
	Fail(ctx context.Context, origin string, params *BackoffParams) (int, error)
	// Succeed ends origin's series of pausing answers and its failures in
	// a row.
	Succeed(ctx context.Context, origin string) error
	// Sample tells the other instances of a response time of origin.
	Sample(ctx context.Context, origin string, d time.Duration) error
	// Clear ends origin's pause and series now, everywhere.
	Clear(ctx context.Context, origin string) error
}

// GovernorOptions configures NewGovernor.
type GovernorOptions struct {
	// Shared, when set, shares pauses and response times with a fleet;
	// what other instances record reaches this one through Apply.
	Shared Shared
	// OnPause, when set, is called with every pause an answer of this
	// process started or lengthened (metrics, log).
	OnPause func(origin string, p Pause)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Jitter returns a number in [0, 1) scaled to MaxJitter; nil means
	// math/rand.
	Jitter func() float64
}

// Governor keeps, per origin, the pause that holds its requests and its
// recent response times. It is safe for concurrent use; its parameters
// change with SetParams (a reload) while its state stays.
type Governor struct {
	shared  Shared
	onPause func(string, Pause)
	now     func() time.Time
	jitter  func() float64

	backoff  atomic.Pointer[BackoffParams]
	adaptive atomic.Pointer[AdaptiveParams]

	// pauses holds origin -> *pauseEntry for origins paused or within a
	// series; active counts them, so that a request to an origin when
	// none is paused costs one atomic load.
	pauses sync.Map
	active atomic.Int64
	// times holds the recent response times per origin (adaptive only).
	times *lru.Cache[string, *latencies]
}

// pauseEntry is an origin's pause, replaced whole under mu, its probe
// (probe.go) and its failures in a row.
type pauseEntry struct {
	mu sync.Mutex
	p  Pause
	// fails counts the failures in a row, the last at failAt; they pause
	// the origin at BackoffParams.FailuresInARow. Not part of p: a count
	// that pauses nothing neither unsettles the origin nor holds anything.
	fails  int
	failAt time.Time
	// gen counts the changes of p; unsettled is set by each of them and
	// cleared by a probe's answer of the same gen; probe is the request
	// sent first after the pause, nil when none is in flight.
	gen       uint64
	unsettled bool
	probe     *Probe
}

// latencies are an origin's last Samples response times, a ring.
type latencies struct {
	mu   sync.Mutex
	ring [Samples]time.Duration
	n    int // samples taken, up to Samples counted
	next int
}

// NewGovernor returns a governor with backoff and adaptive parameters.
func NewGovernor(backoff BackoffParams, adaptive AdaptiveParams, opts GovernorOptions) *Governor {
	g := &Governor{shared: opts.Shared, onPause: opts.OnPause, now: opts.Now, jitter: opts.Jitter}
	if g.now == nil {
		g.now = time.Now
	}
	if g.jitter == nil {
		g.jitter = rand.Float64
	}
	g.times, _ = lru.New[string, *latencies](MaxTimedOrigins)
	g.SetParams(backoff, adaptive)
	return g
}

// SetParams replaces the parameters (a reload); pauses already started
// keep their end.
func (g *Governor) SetParams(backoff BackoffParams, adaptive AdaptiveParams) {
	backoff.Statuses = slices.Clone(backoff.Statuses)
	g.backoff.Store(&backoff)
	g.adaptive.Store(&adaptive)
}

// Backoff returns the backoff parameters in force.
func (g *Governor) Backoff() BackoffParams { return *g.backoff.Load() }

// Adaptive returns the adaptive parameters in force.
func (g *Governor) Adaptive() AdaptiveParams { return *g.adaptive.Load() }

// Pausing reports whether any origin may be paused now (false: none is,
// and Paused would say so for every origin), at the cost of one atomic
// load.
func (g *Governor) Pausing() bool { return g != nil && g.active.Load() > 0 }

// Heeds reports whether Observe would do anything with a: a pausing
// answer, a success that may end a series, a response time while adaptive
// pacing is on. A caller spares itself the work of naming the origin for
// the others.
func (g *Governor) Heeds(a Answer) bool {
	if g == nil {
		return false
	}
	return a.ConnectionError || a.Status >= 400 || g.active.Load() > 0 || (a.Latency > 0 && g.adaptive.Load().Factor > 0)
}

// Adapting reports whether adaptive pacing is on.
func (g *Governor) Adapting() bool { return g != nil && g.adaptive.Load().Factor > 0 }

// Paused returns origin's pause when it is not over.
func (g *Governor) Paused(origin string) (Pause, bool) {
	if g == nil || g.active.Load() == 0 {
		return Pause{}, false
	}
	v, ok := g.pauses.Load(origin)
	if !ok {
		return Pause{}, false
	}
	e := v.(*pauseEntry)
	e.mu.Lock()
	p := e.p
	e.mu.Unlock()
	return p, p.Active(g.now())
}

// Observe takes an origin's answer into account: a pausing answer starts
// or lengthens its pause (shared with the fleet), a success ends its
// series, and a measured response time counts for adaptive pacing. It
// returns the pause an answer started or lengthened (ok false for other
// answers).
func (g *Governor) Observe(ctx context.Context, origin string, a Answer) (Pause, bool) {
	if a.Latency > 0 && g.adaptive.Load().Factor > 0 {
		g.sample(ctx, origin, a.Latency)
	}
	params := g.backoff.Load()
	if a.At.IsZero() {
		a.At = g.now()
	}
	failures := 0
	switch {
	case params.pauses(a):
	case params.counts(a):
		if failures = g.fail(ctx, origin, a.At, params); failures < params.FailuresInARow {
			return Pause{}, false
		}
	case !a.ConnectionError && a.Status < 400:
		g.succeed(ctx, origin)
		return Pause{}, false
	default:
		return Pause{}, false
	}
	p := g.pause(ctx, origin, a, params, failures)
	if g.onPause != nil {
		g.onPause(origin, p)
	}
	return p, true
}

// pause records a pausing answer (failures: the failures in a row that
// made it one, 0 for a pausing status), through the shared store when
// there is one (falling back to this process when it fails).
func (g *Governor) pause(ctx context.Context, origin string, a Answer, params *BackoffParams, failures int) Pause {
	ra, hasRA := retryAfter(a.RetryAfter, a.Date, a.At)
	jitter := g.jitter() * MaxJitter
	if g.shared != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
		p, err := g.shared.Pause(ctx, origin, a, ra, hasRA, params, jitter, failures)
		cancel()
		if err == nil {
			g.Apply(origin, p)
			return p
		}
		slog.Warn("pacing: the shared store did not record a pause: this instance pauses the origin alone", "origin", origin, "err", err)
	}
	return g.update(origin, func(prev Pause) Pause {
		d, streak := step(prev, a.At, ra, hasRA, params, jitter)
		until := a.At.Add(d)
		if until.Before(prev.Until) {
			until = prev.Until
		}
		return Pause{Until: until, Status: a.Status, RetryAfter: clipHeader(a.RetryAfter), At: a.At, Streak: streak, Failures: failures}
	})
}

// Apply makes p origin's pause in this process, unless it already has
// one that ends later (then only the series is taken from p). The shared
// store calls it with what any instance recorded.
func (g *Governor) Apply(origin string, p Pause) {
	g.update(origin, func(prev Pause) Pause {
		if prev.Until.After(p.Until) {
			prev.Streak = max(prev.Streak, p.Streak)
			return prev
		}
		return p
	})
}

// update replaces origin's pause by fn's answer and returns it.
func (g *Governor) update(origin string, fn func(Pause) Pause) Pause {
	v, loaded := g.pauses.LoadOrStore(origin, &pauseEntry{})
	e := v.(*pauseEntry)
	e.mu.Lock()
	prev := e.p
	e.p = fn(e.p)
	p := e.p
	if p != prev {
		e.gen++
		e.unsettled = true
	}
	e.mu.Unlock()
	if !loaded {
		g.active.Add(1)
		g.bound() // with the new pause in place: it is not the first to end
	}
	return p
}

// succeed ends origin's series after a success.
func (g *Governor) succeed(ctx context.Context, origin string) {
	if g.active.Load() == 0 {
		return
	}
	v, ok := g.pauses.Load(origin)
	if !ok {
		return
	}
	e := v.(*pauseEntry)
	e.mu.Lock()
	had := e.p.Streak > 0 || e.fails > 0
	e.p.Streak, e.fails = 0, 0
	e.mu.Unlock()
	if had && g.shared != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
		defer cancel()
		if err := g.shared.Succeed(ctx, origin); err != nil {
			slog.Warn("pacing: the shared store did not record a success", "origin", origin, "err", err)
		}
	}
}

// Succeeded ends origin's series and failures in a row in this process
// (the shared store tells it that another instance saw a success).
func (g *Governor) Succeeded(origin string) {
	if v, ok := g.pauses.Load(origin); ok {
		e := v.(*pauseEntry)
		e.mu.Lock()
		e.p.Streak, e.fails = 0, 0
		e.mu.Unlock()
	}
}

// Clear ends origin's pause and series now, in the fleet when shared (an
// operator's action).
func (g *Governor) Clear(ctx context.Context, origin string) error {
	g.Cleared(origin)
	if g.shared == nil {
		return nil
	}
	return g.shared.Clear(ctx, origin)
}

// Cleared forgets origin's pause in this process; the requests waiting
// for its probe go.
func (g *Governor) Cleared(origin string) {
	if v, ok := g.pauses.LoadAndDelete(origin); ok {
		g.active.Add(-1)
		e := v.(*pauseEntry)
		e.mu.Lock()
		e.endProbe(e.probe, false)
		e.mu.Unlock()
	}
}

// bound keeps the pauses table within MaxPausedOrigins: once over, it
// forgets the entries whose pauses ended first, down to nine tenths of
// the bound, so that a full table costs one sort per tenth of its size
// of new origins, not one scan per new origin.
func (g *Governor) bound() {
	if g.active.Load() <= MaxPausedOrigins {
		return
	}
	type ending struct {
		origin string
		until  time.Time
	}
	var all []ending
	g.pauses.Range(func(k, v any) bool {
		e := v.(*pauseEntry)
		e.mu.Lock()
		all = append(all, ending{k.(string), e.p.Until})
		e.mu.Unlock()
		return true
	})
	slices.SortFunc(all, func(a, b ending) int { return a.until.Compare(b.until) })
	for _, e := range all[:max(len(all)-MaxPausedOrigins*9/10, 0)] {
		g.Cleared(e.origin)
	}
}

// PausedOrigin is an origin paused now, for the status page.
type PausedOrigin struct {
	Origin string
	Pause  Pause
	// AwaitingProbe: the pause is over, and the origin's requests wait for
	// the answer to the first one sent after it.
	AwaitingProbe bool
}

// PausedNow lists the origins whose requests wait now: those paused, the
// longest pause first, then those whose pause is over and whose probe is
// awaited; at most limit of them. It forgets the entries that are over and
// quiet.
func (g *Governor) PausedNow(limit int) []PausedOrigin {
	if g == nil || g.active.Load() == 0 {
		return nil
	}
	now := g.now()
	quiet := g.backoff.Load().Max
	var out []PausedOrigin
	g.pauses.Range(func(k, v any) bool {
		e := v.(*pauseEntry)
		e.mu.Lock()
		p, unsettled, failAt := e.p, e.unsettled, e.failAt
		e.mu.Unlock()
		// Quiet: Max since the last answer, the end of the pause (which a
		// Retry-After may put beyond Max) and the last failure.
		last := p.At
		for _, t := range []time.Time{p.Until, failAt} {
			if t.After(last) {
				last = t
			}
		}
		switch {
		case p.Active(now):
			out = append(out, PausedOrigin{Origin: k.(string), Pause: p})
		case now.Sub(last) >= quiet:
			g.Cleared(k.(string))
		case unsettled:
			out = append(out, PausedOrigin{Origin: k.(string), Pause: p, AwaitingProbe: true})
		}
		return true
	})
	slices.SortFunc(out, func(a, b PausedOrigin) int { return b.Pause.Until.Compare(a.Pause.Until) })
	return out[:min(len(out), limit)]
}

// ObserveLatency takes a response time of origin into account for
// adaptive pacing only (an origin whose pauses are ignored); 0 does
// nothing.
func (g *Governor) ObserveLatency(ctx context.Context, origin string, d time.Duration) {
	if d > 0 && g.adaptive.Load().Factor > 0 {
		g.sample(ctx, origin, d)
	}
}

// sample records a response time of origin, and tells the fleet.
func (g *Governor) sample(ctx context.Context, origin string, d time.Duration) {
	g.Sampled(origin, d)
	if g.shared == nil {
		return
	}
	go func() { // the answer is not held for it
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
		defer cancel()
		_ = g.shared.Sample(ctx, origin, d)
	}()
}

// Sampled records a response time of origin in this process (the shared
// store calls it with the other instances' samples).
func (g *Governor) Sampled(origin string, d time.Duration) {
	l, ok := g.times.Get(origin)
	if !ok {
		l = &latencies{}
		if prev, found, _ := g.times.PeekOrAdd(origin, l); found {
			l = prev
		}
	}
	l.mu.Lock()
	l.ring[l.next] = d
	l.next = (l.next + 1) % Samples
	l.n = min(l.n+1, Samples)
	l.mu.Unlock()
}

// ResponseTime returns origin's recent response time: the median of its
// last Samples (the upper one of an even count), false when none is
// known.
func (g *Governor) ResponseTime(origin string) (time.Duration, bool) {
	l, ok := g.times.Peek(origin)
	if !ok {
		return 0, false
	}
	l.mu.Lock()
	s := slices.Clone(l.ring[:l.n])
	l.mu.Unlock()
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	return s[len(s)/2], true
}

// AdaptiveInterval returns the interval adaptive pacing asks of origin:
// Factor × its recent response time within Min and Max; Min when no
// response time is known yet; 0 when adaptive pacing is off.
func (g *Governor) AdaptiveInterval(origin string) time.Duration {
	if g == nil {
		return 0
	}
	a := g.adaptive.Load()
	if a.Factor <= 0 {
		return 0
	}
	rt, _ := g.ResponseTime(origin)
	d := time.Duration(float64(rt) * a.Factor)
	return min(max(d, a.Min), max(a.Max, a.Min))
}
