package pacing

import (
	"context"
	"sync"
	"time"
)

// A slot says when a request may leave the proxy, not when the origin sees
// it: a request that must first open a connection (TCP, TLS) reaches the
// origin that much later, and the next request, on a connection already
// open, would follow it closer than the interval. The gate closes that
// gap in this process: a request released at its slot goes upstream only
// once the previous request of its key has been written to the origin
// (Permit.Sent) and the interval has passed since then.

// gates holds a gate per key while it matters: from a request's release
// until an interval after its send.
type gates struct{ m sync.Map } // key -> *gate

// gate is one key's: when its last request was written, and whether one
// is on its way (released, not yet written).
type gate struct {
	mu   sync.Mutex
	last time.Time     // when the last request was written; zero if none
	busy chan struct{} // closed when the request on its way is written or dropped
}

// ticket is a request's passage through its gate.
type ticket struct {
	gates    *gates
	key      string
	g        *gate
	interval time.Duration
	once     sync.Once
}

// enter waits, until ctx is done or maxWait has passed, for key's gate to
// be free and interval to have passed since its last send, then takes it.
// It returns how long it waited.
func (gs *gates) enter(ctx context.Context, key string, interval, maxWait time.Duration) (*ticket, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(maxWait)
	for {
		v, _ := gs.m.LoadOrStore(key, &gate{})
		g := v.(*gate)
		g.mu.Lock()
		if cur, ok := gs.m.Load(key); !ok || cur != g { // removed while idle: take the new one
			g.mu.Unlock()
			continue
		}
		busy := g.busy
		wait := time.Until(g.last.Add(interval))
		if busy == nil && wait <= 0 {
			g.busy = make(chan struct{})
			g.mu.Unlock()
			return &ticket{gates: gs, key: key, g: g, interval: interval}, time.Since(start), nil
		}
		g.mu.Unlock()
		if time.Until(deadline) < max(wait, 0) {
			return nil, time.Since(start), &RefusedError{Reason: ReasonSlot, Wait: time.Since(start) + max(wait, interval), RetryAfter: interval}
		}
		if err := waitGate(ctx, busy, wait, time.Until(deadline)); err != nil {
			return nil, time.Since(start), err
		}
	}
}

// waitGate waits for busy to close (if set) or else for wait, bounded by
// limit; ctx's error if the caller gives up first.
func waitGate(ctx context.Context, busy chan struct{}, wait, limit time.Duration) error {
	if busy == nil {
		return sleep(ctx, wait)
	}
	timer := time.NewTimer(max(limit, 0))
	defer timer.Stop()
	select {
	case <-busy:
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// leave frees the gate: the request was written to the origin at at (the
// next one waits an interval from there). Only the first call counts.
func (t *ticket) leave(at time.Time) {
	t.once.Do(func() {
		g := t.g
		g.mu.Lock()
		g.last = at
		close(g.busy)
		g.busy = nil
		last := g.last
		g.mu.Unlock()
		// Forget the gate once it cannot delay anyone: an interval after
		// its last send, if nothing happened since.
		time.AfterFunc(time.Until(last.Add(t.interval)), func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.busy == nil && g.last.Equal(last) {
				t.gates.m.CompareAndDelete(t.key, g)
			}
		})
	})
}
