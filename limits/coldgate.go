// Package limits keeps the counts behind robotsgate's limits on what one
// party may make it do, each table bounded in memory: per client address,
// the lookups waiting at once for an uncached robots.txt or tdmrep.json
// (ColdGates, robots.cold_fetches_per_client) and the proxy credentials
// that failed in the last minute (AuthFailures, auth.failure_limit); per
// origin, the licence documents fetched in the last minute (OriginWindow,
// usage.license_fetches_per_origin). The proxy asks them as it admits a
// request; they decide nothing else.
package limits

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/robots/resolver"
)

// ColdGates bound, per client address, the requests that wait at once for
// an uncached origin's robots.txt or tdmrep.json
// (robots.cold_fetches_per_client): one client must not make robotsgate
// start thousands of fetches at once. The table holds only the addresses
// with such a request in flight, so it is bounded by the requests being
// served. Its zero value is ready to use.
type ColdGates struct {
	mu      sync.Mutex
	clients map[netip.Addr]*coldCount
}

type coldCount struct {
	n     int
	freed chan struct{} // closed, and replaced, when a place comes free
}

// clientGate is one client's gate: at most limit cold lookups at once, a
// lookup waiting at most wait for a place.
type clientGate struct {
	gates *ColdGates
	addr  netip.Addr
	limit int
	wait  time.Duration
}

// Gate returns addr's gate: at most limit of its lookups cold at once,
// each waiting at most wait for a place; nil when there is no bound.
func (g *ColdGates) Gate(addr netip.Addr, limit int, wait time.Duration) resolver.ColdGate {
	if limit <= 0 || !addr.IsValid() {
		return nil
	}
	return &clientGate{gates: g, addr: addr, limit: limit, wait: wait}
}

// Acquire waits for a place among the client's cold lookups.
func (c *clientGate) Acquire(ctx context.Context) (func(), error) {
	timer := time.NewTimer(c.wait)
	defer timer.Stop()
	for {
		freed, ok := c.gates.take(c.addr, c.limit)
		if ok {
			return func() { c.gates.give(c.addr) }, nil
		}
		select {
		case <-freed:
		case <-timer.C:
			return nil, fmt.Errorf("%w (%d, waited %v)", resolver.ErrColdLimit, c.limit, c.wait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// take takes a place for addr if one is free; otherwise it returns the
// channel closed when one comes free.
func (g *ColdGates) take(addr netip.Addr, limit int) (<-chan struct{}, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.clients == nil {
		g.clients = map[netip.Addr]*coldCount{}
	}
	c := g.clients[addr]
	if c == nil {
		c = &coldCount{freed: make(chan struct{})}
		g.clients[addr] = c
	}
	if c.n < limit {
		c.n++
		return nil, true
	}
	return c.freed, false
}

// give frees a place of addr.
func (g *ColdGates) give(addr netip.Addr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.clients[addr]
	c.n--
	close(c.freed)
	c.freed = make(chan struct{})
	if c.n == 0 {
		delete(g.clients, addr)
	}
}
