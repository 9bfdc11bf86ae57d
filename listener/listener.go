// Package listener keeps a listening socket serving whatever its clients
// do. Accept retries temporary errors (the process out of descriptors,
// EMFILE; the system out of them, ENFILE; the kernel out of buffers) with
// a backoff from 5 ms doubling to 1 s, as net/http.Server.Serve does,
// instead of ending the accept loop; it caps the connections open at once,
// in all and per client address, closing those beyond a cap as soon as
// they are accepted; and it says whether it is accepting (Err), for a
// readiness check, and what it refused (Stats), for metrics.
//
// It imports no other package of the module.
package listener

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Backoff of a failing Accept: net/http.Server.Serve's.
const (
	firstDelay = 5 * time.Millisecond
	maxDelay   = time.Second
)

// FailingWindow is how long after its last accept error a listener that
// has accepted nothing since counts as failing (Err): a failing listener
// retries at least once per maxDelay, so a quiet window this long means
// that Accept waits for clients again.
const FailingWindow = 3 * time.Second

// logEvery spaces the log lines of a listener that keeps failing or
// refusing.
const logEvery = 10 * time.Second

// Options configures a Listener.
type Options struct {
	// What names the listener in log lines ("the SOCKS5 listener").
	What string
	// MaxConns caps the connections open at once; 0 means no cap.
	MaxConns int
	// MaxPerClient caps the connections open at once from one client
	// address (for IPv6, from one /64, which one subscriber usually
	// holds whole); 0 means no cap.
	MaxPerClient int
	// Log receives the accept failures and the refusals, each kind at
	// most once per 10 s; nil means slog.Default().
	Log *slog.Logger
}

// Stats are a listener's counters.
type Stats struct {
	// Open is the number of connections open now.
	Open int
	// OverListenerCap and OverClientCap count the connections closed at
	// once because MaxConns, or MaxPerClient, was reached.
	OverListenerCap, OverClientCap uint64
	// AcceptErrors counts the accept errors, retried or not.
	AcceptErrors uint64
	// Accepting is false while Err is not nil.
	Accepting bool
}

// Listener is a net.Listener whose Accept survives temporary errors and
// enforces the caps of its Options. Its connections release their place
// when closed.
type Listener struct {
	net.Listener
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	open      int
	perClient map[netip.Addr]int // at most MaxConns entries: each holds a connection
	stopped   error              // a permanent accept error: Accept returns it for good
	failing   error              // the latest accept error, until a connection is accepted
	failedAt  time.Time          // when failing happened
	since     time.Time          // the first error of the current run of failures
	failures  int                // errors in the current run
	loggedAt  time.Time          // the latest failure log line
	refusedAt time.Time          // the latest refusal log line

	overListener, overClient, acceptErrors atomic.Uint64

	done      chan struct{}
	closeOnce sync.Once
}

// New guards ln with opts.
func New(ln net.Listener, opts Options) *Listener {
	return &Listener{Listener: ln, opts: opts, log: cmp.Or(opts.Log, slog.Default()),
		perClient: map[netip.Addr]int{}, done: make(chan struct{})}
}

// Accept returns the next connection within the caps. It returns an error
// only once the listener is closed (net.ErrClosed) or after an error that
// retrying cannot mend (the listener has then stopped, and Err says so).
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			l.acceptErrors.Add(1)
			if !Temporary(err) {
				l.stop(err)
				return nil, err
			}
			delay = nextDelay(delay)
			l.failed(err, delay)
			select {
			case <-time.After(delay):
			case <-l.done:
				return nil, fmt.Errorf("accept: %w", net.ErrClosed)
			}
			continue
		}
		delay = 0
		l.recovered()
		if conn := l.admit(c); conn != nil {
			return conn, nil
		}
	}
}

// nextDelay is the wait after a temporary error that follows a wait of d
// (0 after an accepted connection): net/http's backoff.
func nextDelay(d time.Duration) time.Duration { return min(max(2*d, firstDelay), maxDelay) }

// Close stops accepting: an Accept waiting in its backoff returns at once.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *Listener) isClosed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// Err says why the listener is not accepting connections: it has stopped
// (a permanent error), or its latest accept failed less than
// FailingWindow ago and nothing was accepted since. Nil when it accepts.
func (l *Listener) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.stopped != nil:
		return fmt.Errorf("%s has stopped accepting connections: %w", l.opts.What, l.stopped)
	case l.failing != nil && time.Since(l.failedAt) < FailingWindow:
		return fmt.Errorf("%s cannot accept connections (%d errors since %s): %w",
			l.opts.What, l.failures, l.since.UTC().Format(time.RFC3339), l.failing)
	}
	return nil
}

// Stats returns the listener's counters.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	return Stats{Open: open, OverListenerCap: l.overListener.Load(), OverClientCap: l.overClient.Load(),
		AcceptErrors: l.acceptErrors.Load(), Accepting: l.Err() == nil}
}

// Temporary reports whether an accept error may go away by itself, as
// net/http.Server.Serve judges it: a timeout, an interrupted call, the
// process or the system out of descriptors (EMFILE, ENFILE), the kernel
// out of buffers or memory (ENOBUFS, ENOMEM), a connection aborted or
// reset before it was accepted.
func Temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EINTR, syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EAGAIN:
		return true
	}
	return false
}

// stop records a permanent error.
func (l *Listener) stop(err error) {
	l.mu.Lock()
	l.stopped = err
	l.mu.Unlock()
	l.log.Error(l.opts.What+" has stopped accepting connections", "addr", l.Addr().String(), "err", err)
}

// failed records a temporary error, logging the first of a run and then
// one line per logEvery.
func (l *Listener) failed(err error, delay time.Duration) {
	now := time.Now()
	l.mu.Lock()
	if l.failing == nil {
		l.since, l.failures = now, 0
	}
	l.failing, l.failedAt = err, now
	l.failures++
	n, since := l.failures, l.since
	logIt := n == 1 || now.Sub(l.loggedAt) >= logEvery
	if logIt {
		l.loggedAt = now
	}
	l.mu.Unlock()
	if logIt {
		l.log.Warn(l.opts.What+" cannot accept connections, retrying (see connections in docs/operations.md)",
			"addr", l.Addr().String(), "err", err, "errors", n, "since", since.UTC().Format(time.RFC3339Nano), "retry_in", delay)
	}
}

// recovered ends a run of failures.
func (l *Listener) recovered() {
	l.mu.Lock()
	if l.failing == nil {
		l.mu.Unlock()
		return
	}
	n, since := l.failures, l.since
	l.failing, l.failures = nil, 0
	l.mu.Unlock()
	l.log.Info(l.opts.What+" accepts connections again", "addr", l.Addr().String(), "errors", n, "failed_for", time.Since(since).Round(time.Millisecond))
}

// admit takes a place for c within the caps and returns it guarded, or
// closes it and returns nil.
func (l *Listener) admit(c net.Conn) net.Conn {
	key := clientKey(c.RemoteAddr())
	l.mu.Lock()
	var reason string
	switch {
	case l.opts.MaxConns > 0 && l.open >= l.opts.MaxConns:
		reason = "the listener's cap"
		l.overListener.Add(1)
	case l.opts.MaxPerClient > 0 && key.IsValid() && l.perClient[key] >= l.opts.MaxPerClient:
		reason = "the client's cap"
		l.overClient.Add(1)
	default:
		l.open++
		if key.IsValid() {
			l.perClient[key]++
		}
		l.mu.Unlock()
		return &Conn{Conn: c, l: l, key: key}
	}
	now := time.Now()
	logIt := now.Sub(l.refusedAt) >= logEvery
	if logIt {
		l.refusedAt = now
	}
	open, fromClient := l.open, l.perClient[key]
	l.mu.Unlock()
	c.Close()
	if logIt {
		l.log.Warn(l.opts.What+" closed a connection at once: "+reason+" is reached (connections.max_per_listener, connections.max_per_client)",
			"addr", l.Addr().String(), "client", c.RemoteAddr().String(), "open", open, "open_from_client", fromClient,
			"max_per_listener", l.opts.MaxConns, "max_per_client", l.opts.MaxPerClient)
	}
	return nil
}

// release gives back the place of a closed connection.
func (l *Listener) release(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if !key.IsValid() {
		return
	}
	if n := l.perClient[key] - 1; n > 0 {
		l.perClient[key] = n
	} else {
		delete(l.perClient, key)
	}
}

// clientKey is the address a client's connections are counted under: an
// IPv4 address, an IPv6 address's /64; invalid for an address that is not
// IP (no cap per client).
func clientKey(a net.Addr) netip.Addr {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().Addr()
	}
	return ip
}

// Conn is an accepted connection; closing it gives back its place.
type Conn struct {
	net.Conn
	l    *Listener
	key  netip.Addr
	once sync.Once
}

// Close closes the connection and gives back its place (once).
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// NetConn returns the connection accepted, as crypto/tls's Conn does.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// SyscallConn gives access to the socket (the kernel's original
// destination of a redirected connection, socket options).
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T is not a socket", c.Conn)
	}
	return sc.SyscallConn()
}

// CloseWrite half-closes a TCP connection (blind tunnels); other
// connections are closed.
func (c *Conn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return c.Close()
}

// CloseRead is CloseWrite's other half.
func (c *Conn) CloseRead() error {
	if hc, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return hc.CloseRead()
	}
	return c.Close()
}
