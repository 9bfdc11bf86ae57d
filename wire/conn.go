package wire

import (
	"math"
	"net"
	"sync/atomic"
	"time"
)

// idleConn fails a Read after timeout of silence. Reads and Writes push
// the deadline back, so a long transfer in either direction keeps it alive
// and only a stalled peer is cut off. The deadline is moved at most once per
// timeout/16 (each move is a timer update in the runtime, and a busy
// upstream connection sees thousands of reads and writes a second), so a
// silent peer is cut off between 15/16 of timeout and timeout after its last
// traffic.
type idleConn struct {
	net.Conn
	timeout time.Duration
	pushed  atomic.Int64 // monoNow() when the deadline was last moved
}

// NewIdleConn returns c with an idle timeout: a Read fails with a timeout
// error once the peer has been silent (no Read or Write) for between
// 15/16 of timeout and timeout. The connection returned has CloseWrite and
// CloseRead, half-closing c when c can (else CloseWrite closes it and
// CloseRead does nothing), so that goproxy can half-close blind tunnels.
func NewIdleConn(c net.Conn, timeout time.Duration) net.Conn {
	return newIdleConn(c, timeout)
}

func newIdleConn(c net.Conn, timeout time.Duration) *idleConn {
	ic := &idleConn{Conn: c, timeout: timeout}
	ic.pushed.Store(math.MinInt64 / 2)
	return ic
}

func (c *idleConn) touch() {
	now := monoNow()
	if now-c.pushed.Load() < int64(c.timeout/16) {
		return
	}
	c.pushed.Store(now)
	c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.touch()
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.touch()
	return c.Conn.Write(p)
}

// monoStart anchors monoNow.
var monoStart = time.Now()

// monoNow is a monotonic clock in nanoseconds.
func monoNow() int64 { return int64(time.Since(monoStart)) }

// CloseWrite and CloseRead let goproxy half-close blind tunnels.
func (c *idleConn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return c.Conn.Close()
}

func (c *idleConn) CloseRead() error {
	if hc, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return hc.CloseRead()
	}
	return nil
}
