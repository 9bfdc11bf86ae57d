package proxy

import (
	"bufio"
	"math"
	"net"
	"net/http"
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

// guardedListener wraps accepted connections in a framingGuard.
type guardedListener struct{ net.Listener }

func (l guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newFramingGuard(c, maxHeaderBytes+4096), nil
}

// closeAfterResponse marks the response "Connection: close" at the last
// moment (goproxy replaces the header map before writing it). The proxy uses
// it after a chunked request, once the framing guard has stopped watching
// the connection, so that no further request can follow unchecked.
type closeAfterResponse struct{ http.ResponseWriter }

func (w closeAfterResponse) WriteHeader(code int) {
	w.Header().Set("Connection", "close")
	w.ResponseWriter.WriteHeader(code)
}

func (w closeAfterResponse) Write(p []byte) (int, error) {
	if w.Header().Get("Connection") == "" {
		w.Header().Set("Connection", "close")
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (w closeAfterResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w closeAfterResponse) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w closeAfterResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// guardFraming wraps a handler: it answers the framing guard's stand-in for
// a refused request (ambiguous framing, several Host fields) with 400, and makes a request with a
// Transfer-Encoding end its connection (see closeAfterResponse).
func guardFraming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := r.Header.Get(refuseHeader); reason != "" {
			msg := "The request has both Content-Length and Transfer-Encoding headers (ambiguous framing)."
			if reason == refuseHosts {
				msg = "The request has more than one Host header."
			}
			w.Header().Set("Connection", "close")
			writeResponse(w, plainResponse(r, http.StatusBadRequest, "bad-request", "http_request_error", msg))
			return
		}
		if len(r.TransferEncoding) > 0 {
			w = closeAfterResponse{w}
		}
		h.ServeHTTP(w, r)
	})
}
