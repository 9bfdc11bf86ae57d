package wire

import (
	"bufio"
	"net"
	"sync/atomic"
)

// prefixConn is a connection whose first bytes were already read (a
// sniffed tunnel, a hijacked connection with buffered input): Read returns
// them before reading the connection again, so not a byte is lost.
type prefixConn struct {
	net.Conn
	prefix []byte
}

// WithPrefix returns c with prefix, bytes already read from it, put back:
// Reads return them first, then what c reads. WithPrefix owns prefix from
// then on.
func WithPrefix(c net.Conn, prefix []byte) net.Conn {
	return &prefixConn{Conn: c, prefix: prefix}
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		if len(c.prefix) == 0 {
			c.prefix = nil // let the buffer go
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// buffered returns a copy of what the server had already read of a
// hijacked connection into brw (net/http's Hijack leaves it to the caller).
func buffered(brw *bufio.ReadWriter) []byte {
	if brw == nil || brw.Reader.Buffered() == 0 {
		return nil
	}
	b, _ := brw.Reader.Peek(brw.Reader.Buffered())
	return append([]byte(nil), b...)
}

// Hijacked returns conn, a connection just hijacked from net/http's server
// with brw, as its new owner must read and write it: what the server had
// already read into brw comes first (net/http's Hijack leaves it to the
// caller), and every byte written to it is added to written.
func Hijacked(conn net.Conn, brw *bufio.ReadWriter, written *atomic.Int64) net.Conn {
	return &hijackedConn{prefixConn: prefixConn{Conn: conn, prefix: buffered(brw)}, written: written}
}

// hijackedConn counts what is written to a hijacked client connection.
type hijackedConn struct {
	prefixConn
	written *atomic.Int64
}

func (c *hijackedConn) Write(p []byte) (int, error) {
	n, err := c.prefixConn.Write(p)
	c.written.Add(int64(n))
	return n, err
}
