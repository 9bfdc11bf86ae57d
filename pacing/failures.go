package pacing

import (
	"context"
	"log/slog"
	"time"
)

// Failures in a row (BackoffParams.counts: 500, 502, 504, timeouts) pause
// an origin once FailuresInARow of them came with no success between,
// each within Max of the previous. The count is kept next to the origin's
// pause (pauseEntry.fails) and, in a fleet, in the origin's Redis hash, so
// that failures through different instances count together.

// fail counts a failure of origin at at, through the shared store when
// there is one (falling back to this process when it fails), and returns
// the failures in a row.
func (g *Governor) fail(ctx context.Context, origin string, at time.Time, params *BackoffParams) int {
	if g.shared != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
		n, err := g.shared.Fail(ctx, origin, params)
		cancel()
		if err == nil {
			g.Failed(origin, n, at)
			return n
		}
		slog.Warn("pacing: the shared store did not count a failure: this instance counts it alone", "origin", origin, "err", err)
	}
	e := g.entry(origin)
	e.mu.Lock()
	if e.fails == 0 || at.Sub(e.failAt) >= params.Max {
		e.fails = 0
	}
	e.fails++
	e.failAt = at
	n := e.fails
	e.mu.Unlock()
	return n
}

// Failed makes n origin's failures in a row in this process, the last at
// at (the shared store calls it with what any instance counted).
func (g *Governor) Failed(origin string, n int, at time.Time) {
	e := g.entry(origin)
	e.mu.Lock()
	e.fails, e.failAt = n, at
	e.mu.Unlock()
}

// entry returns origin's entry, creating it.
func (g *Governor) entry(origin string) *pauseEntry {
	v, loaded := g.pauses.LoadOrStore(origin, &pauseEntry{})
	if !loaded {
		g.active.Add(1)
		g.bound()
	}
	return v.(*pauseEntry)
}
