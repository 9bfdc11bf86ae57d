package proxy

import (
	"net"
	"sync"
	"time"
)

// idleConn fails a Read after timeout of silence. Every Read and Write pushes
// the deadline back, so a long transfer in either direction keeps it alive
// and only a stalled peer is cut off.
type idleConn struct {
	net.Conn
	timeout time.Duration
}

func newIdleConn(c net.Conn, timeout time.Duration) *idleConn {
	return &idleConn{Conn: c, timeout: timeout}
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	return c.Conn.Write(p)
}

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

// oneConnListener hands one connection to http.Server.Serve, then blocks
// until that connection is closed, so Serve returns when the tunnel ends.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	served bool
	mu     sync.Mutex
	done   chan struct{}
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{done: make(chan struct{})}
	l.conn = &notifyConn{Conn: c, closed: l.close}
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.served {
		l.served = true
		l.mu.Unlock()
		return l.conn, nil
	}
	l.mu.Unlock()
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) close() { l.once.Do(func() { close(l.done) }) }

// Close ends Accept; the connection itself is closed by its server.
func (l *oneConnListener) Close() error {
	l.close()
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

// notifyConn tells its listener when it is closed.
type notifyConn struct {
	net.Conn
	closed func()
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	c.closed()
	return err
}
