package resolver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/robotsgate/robotsgate/origin"
)

// A name may have several addresses, each a different server. A client
// that connected to one of them (a transparent proxy's client, redirected
// by the kernel) must be judged by that server's robots.txt, not by the
// one a fetch of the name happens to reach first: otherwise whoever
// controls the name's other address writes the rules for the first.
// ResolveAt fetches robots.txt from the address given, and caches it by
// origin and address, apart from the files Resolve fetches.

// pinnedShare is the part of Config.CacheEntries and Config.CacheBytes
// that the files fetched from one address (ResolveAt) may hold, in a
// cache of their own: 1/pinnedShare.
const pinnedShare = 4

// pinnedKey is what ResolveAt caches a file by.
type pinnedKey struct {
	o  origin.Origin
	at netip.AddrPort
}

func (k pinnedKey) String() string { return k.o.String() + "@" + k.at.String() }

// ResolveAt returns the robots.txt verdict for o as served at the address
// at (an IP address and port): its fetch, and each redirect to o's own
// host and port, connects to at, through the same dialer (the egress
// guard) as every fetch. Its files are cached by origin and address, in
// a cache of their own bounded by a quarter of Config.CacheEntries and
// Config.CacheBytes, with the same freshness, backoff and fallback to an
// earlier copy as Resolve's; they are not shared through Config.Store (an
// address is one instance's client's view). With a parent proxy
// (Config.Proxy) the parent connects, by name. An invalid at, or one that
// o's host (an IP address) already is, is Resolve.
func (r *Resolver) ResolveAt(ctx context.Context, o origin.Origin, at netip.AddrPort) (*Result, error) {
	if !at.IsValid() || o.Port == at.Port() && o.Host == at.Addr().Unmap().String() {
		return r.Resolve(ctx, o)
	}
	k := pinnedKey{o: o, at: netip.AddrPortFrom(at.Addr().Unmap(), at.Port())}
	now := r.hitNow()
	if res, ok := r.pinned.Get(k); ok {
		if res.fresh(now) {
			r.hits.Add(1)
			return res, nil
		}
		if res.usable() {
			r.hits.Add(1)
			r.flight.Refresh(&res.refreshing, k.String(), func() *Result { return r.refreshAt(k) })
			return res, nil
		}
	}
	r.misses.Add(1)
	release, err := enterCold(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolve %s at %s: %w", o, k.at, err)
	}
	defer release()
	res, err := r.flight.Wait(ctx, k.String(), func() *Result { return r.refreshAt(k) })
	if err != nil {
		return nil, fmt.Errorf("resolve %s at %s: %w", o, k.at, err)
	}
	return res, nil
}

// refreshAt fetches k's robots.txt from its address and caches it.
func (r *Resolver) refreshAt(k pinnedKey) *Result {
	prev, _ := r.pinned.Peek(k)
	if prev != nil && prev.fresh(r.cfg.Now()) {
		return prev // stored by the flight that just ended
	}
	client := r.pinnedClient(k)
	defer client.CloseIdleConnections()
	res := r.fetchVerdictWith(client, k.o, prev, false)
	res.promoted.Store(r.cfg.Now().UnixNano())
	r.pinned.Add(k, res, res.size())
	return res
}

// pinnedClient is a client like the resolver's whose connections to k's
// host and port go to k's address; one per fetch, keeping no connection
// (a pooled one would be another address's).
func (r *Resolver) pinnedClient(k pinnedKey) *http.Client {
	cfg := r.cfg
	dial, hostPort := cfg.DialContext, k.o.HostPort()
	cfg.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == hostPort {
			addr = k.at.String()
		}
		return dial(ctx, network, addr)
	}
	return newClient(&cfg, false)
}
