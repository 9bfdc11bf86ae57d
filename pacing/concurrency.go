package pacing

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Across a fleet, a request to an origin with pacing.max_concurrency
// needs a permit of its process (the limiter: first come, first served)
// and one of the fleet (a ConcurrencyStore). A process asks the fleet for
// one only for the requests its own limiter let through, so at most limit
// requests of each process try, and retries every fleetPoll while all are
// taken: the fleet's permits are not handed out in order. A permit's
// lease is renewed while its request lasts, so that the permits of an
// instance that died come free after a lease. A store that fails is
// logged and the request goes on with its process's permit alone.

// Timings of the fleet's permits.
const (
	// FleetLease is how long a fleet permit is held without renewal: the
	// longest the permits of an instance that died stay taken.
	FleetLease = 60 * time.Second
	// fleetPoll is how often a request waiting for a fleet permit asks
	// again (nothing tells it one came free).
	fleetPoll = 25 * time.Millisecond
)

// fleetPermit is a permit of the fleet, renewed until given back.
type fleetPermit struct {
	store  ConcurrencyStore
	origin string
	token  string
	mu     sync.Mutex
	renew  *time.Timer // nil once given back
}

// takeFleet waits, at most maxWait, for one of the fleet's permits of
// origin. A store that fails gives none and no error: the request goes on
// with its process's permit.
func (p *Pacer) takeFleet(ctx context.Context, origin string, maxWait time.Duration) (*fleetPermit, time.Duration, error) {
	start := time.Now()
	for {
		token, ok, err := p.shared.TryTake(ctx, origin, p.limit.max, FleetLease)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, time.Since(start), ctx.Err()
		case err != nil:
			slog.Warn("pacing: the fleet's concurrency permits cannot be read: this request counts in its instance only", "origin", origin, "err", err)
			return nil, time.Since(start), nil
		case ok:
			return newFleetPermit(p.shared, origin, token), time.Since(start), nil
		}
		left := maxWait - time.Since(start)
		if left <= 0 {
			return nil, time.Since(start), concurrencyRefusal(maxWait)
		}
		if err := sleep(ctx, min(fleetPoll, left)); err != nil {
			return nil, time.Since(start), err
		}
	}
}

// newFleetPermit holds a taken permit, renewing its lease every third of
// it.
func newFleetPermit(store ConcurrencyStore, origin, token string) *fleetPermit {
	f := &fleetPermit{store: store, origin: origin, token: token}
	f.mu.Lock()
	f.renew = time.AfterFunc(FleetLease/3, f.extend)
	f.mu.Unlock()
	return f
}

// extend renews the lease and arms the next renewal, unless given back.
func (f *fleetPermit) extend() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = f.store.Renew(ctx, f.origin, f.token, FleetLease)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.renew != nil {
		f.renew.Reset(FleetLease / 3)
	}
}

// give gives the permit back to the fleet (in the background: the
// response is done); nothing for a nil permit.
func (f *fleetPermit) give() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.renew.Stop()
	f.renew = nil
	f.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = f.store.Give(ctx, f.origin, f.token)
	}()
}
