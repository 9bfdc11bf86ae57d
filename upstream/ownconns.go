package upstream

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/egress"
)

// A transparent listener on the same host as its clients receives what
// the firewall rule redirects, robotsgate's own upstream connections too
// unless the rule leaves them alone (transparent.mark, or an owner match).
// Without that, a request's robots.txt fetch comes back as a transparent
// connection, whose robots.txt fetch comes back again, until descriptors
// run out. OwnConns knows the local address of every upstream connection
// robotsgate has open, so that a transparent listener refuses a connection
// that comes from one of them: the loop ends at its first turn.

// OwnConns are robotsgate's own upstream connections: the local addresses
// of those open, and the destinations of those being dialled. Both hold
// only connections robotsgate has open or is opening, so they are bounded
// by its descriptors.
type OwnConns struct {
	mu      sync.Mutex
	local   map[netip.AddrPort]int
	dialing map[netip.AddrPort]int
	changed chan struct{} // closed and replaced whenever a dial ends
}

// NewOwnConns returns an empty set of connections.
func NewOwnConns() *OwnConns {
	return &OwnConns{local: map[netip.AddrPort]int{}, dialing: map[netip.AddrPort]int{}, changed: make(chan struct{})}
}

// Wrap returns dial (a plain net.Dialer when nil) recording every
// connection it makes.
func (o *OwnConns) Wrap(dial egress.DialFunc) egress.DialFunc {
	if dial == nil {
		dial = (&net.Dialer{Timeout: DialTimeout}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		dest := addrPort(addr)
		o.mu.Lock()
		o.dialing[dest]++
		o.mu.Unlock()
		c, err := dial(ctx, network, addr)
		var local netip.AddrPort
		if err == nil {
			local = addrPort(c.LocalAddr().String())
		}
		o.mu.Lock()
		if n := o.dialing[dest] - 1; n > 0 {
			o.dialing[dest] = n
		} else {
			delete(o.dialing, dest)
		}
		if local.IsValid() {
			o.local[local]++
		}
		close(o.changed)
		o.changed = make(chan struct{})
		o.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if !local.IsValid() {
			return c, nil
		}
		return &ownConn{Conn: c, own: o, local: local}, nil
	}
}

// IsOwn reports whether peer (a transparent client's address) is the
// local address of one of robotsgate's own connections. A connection
// redirected to the listener can be accepted before the dial that made it
// has returned: while robotsgate dials dest (the redirected connection's
// original destination), IsOwn waits for those dials, at most
// DialTimeout.
func (o *OwnConns) IsOwn(peer, dest netip.AddrPort) bool {
	deadline := time.NewTimer(DialTimeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		own, pending, changed := o.local[peer] > 0, o.dialing[dest] > 0, o.changed
		o.mu.Unlock()
		if own || !pending {
			return own
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

func (o *OwnConns) closed(local netip.AddrPort) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := o.local[local] - 1; n > 0 {
		o.local[local] = n
	} else {
		delete(o.local, local)
	}
}

// ownConn is one of robotsgate's upstream connections; closing it forgets
// its local address.
type ownConn struct {
	net.Conn
	own   *OwnConns
	local netip.AddrPort
	once  sync.Once
}

func (c *ownConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.own.closed(c.local) })
	return err
}

// CloseWrite and CloseRead let blind tunnels half-close.
func (c *ownConn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return c.Close()
}

func (c *ownConn) CloseRead() error {
	if hc, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return hc.CloseRead()
	}
	return c.Close()
}

// addrPort parses ip:port, unmapped; invalid when it is not one.
func addrPort(s string) netip.AddrPort {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
