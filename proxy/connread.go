package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// What a connection's request loop reads through: request bodies, the
// 100-continue handshake, and the connection itself with its head limit and
// disconnect watch.

// continueReader sends "100 Continue" when the handler first reads the body
// (RFC 9110 §10.1.1), so a client that waits for it sends the body only to a
// request that will use it.
type continueReader struct {
	io.ReadCloser
	w    *connResponse
	sent bool
}

func (r *continueReader) Read(p []byte) (int, error) {
	if !r.sent {
		r.sent = true
		r.w.mu.Lock()
		if !r.w.committed {
			r.w.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			r.w.bw.Flush()
		}
		r.w.mu.Unlock()
	}
	return r.ReadCloser.Read(p)
}

// requestBody is a request's body as the handler sees it. Reads and Close
// are serialised, because the upstream transport may still be reading the
// body in a goroutine of its own when the response is done, and once Close
// returns nothing reads the connection through it. Close reads what is left
// (up to maxDrainBytes), so that the next request can be read.
type requestBody struct {
	mu     sync.Mutex
	inner  io.ReadCloser
	onEOF  func()
	eof    bool
	closed bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.readLocked(p)
}

func (b *requestBody) readLocked(p []byte) (int, error) {
	n, err := b.inner.Read(p)
	if errors.Is(err, io.EOF) && !b.eof {
		b.eof = true
		b.onEOF()
	}
	return n, err
}

func (b *requestBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if !b.eof {
		io.CopyN(io.Discard, readerFunc(b.readLocked), maxDrainBytes)
	}
	return nil
}

// complete reports whether the body was read to its end.
func (b *requestBody) complete() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// connReader is what the session's bufio.Reader reads: the connection,
// with a limit on the request head and a background read that notices the
// client leaving while a long request runs (as net/http's server does, but
// only for requests that run longer than disconnectAfter).
type connReader struct {
	conn     net.Conn
	limit    int64 // bytes left for the head; <0 when unlimited
	hitLimit bool

	mu       sync.Mutex
	armed    bool // a request runs: the watch may start
	isDue    bool // it has run for disconnectAfter
	bodyDone bool // its body has been read, so the connection is idle
	cancel   context.CancelFunc
	reading  bool          // the background read is in progress
	done     chan struct{} // closed when it ends
	aborting bool
	hasByte  bool // it got a byte: the next request's first
	byteBuf  [1]byte
}

func (r *connReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	if r.hasByte && len(p) > 0 {
		r.hasByte = false
		p[0] = r.byteBuf[0]
		r.mu.Unlock()
		return 1, nil
	}
	r.mu.Unlock()
	if r.limit >= 0 {
		if r.limit == 0 {
			r.hitLimit = true
			return 0, io.EOF
		}
		if int64(len(p)) > r.limit {
			p = p[:r.limit]
		}
	}
	n, err := r.conn.Read(p)
	if r.limit >= 0 {
		r.limit -= int64(n)
	}
	return n, err
}

func (r *connReader) arm(cancel context.CancelFunc, bodyDone bool) {
	r.mu.Lock()
	r.armed, r.isDue, r.bodyDone, r.cancel = true, false, bodyDone, cancel
	r.mu.Unlock()
}

// due is the timer's: the request has run for disconnectAfter.
func (r *connReader) due() {
	r.mu.Lock()
	r.isDue = true
	r.startLocked()
	r.mu.Unlock()
}

// bodyRead is the body's: it has been read to its end.
func (r *connReader) bodyRead() {
	r.mu.Lock()
	r.bodyDone = true
	r.startLocked()
	r.mu.Unlock()
}

// startLocked starts the background read when everything allows it. A byte
// that arrives (a pipelined request) is kept for Read; an error or EOF
// means the client left, and cancels the request.
func (r *connReader) startLocked() {
	if !r.armed || !r.isDue || !r.bodyDone || r.reading || r.hasByte {
		return
	}
	r.reading, r.done = true, make(chan struct{})
	cancel := r.cancel
	go func() {
		n, err := r.conn.Read(r.byteBuf[:])
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reading = false
		r.hasByte = n == 1
		var netErr net.Error
		if err != nil && !(r.aborting && errors.As(err, &netErr) && netErr.Timeout()) {
			cancel()
		}
		close(r.done)
	}()
}

// disarm ends the watch, waiting for a background read to stop.
func (r *connReader) disarm(conn net.Conn) {
	r.mu.Lock()
	r.armed = false
	if !r.reading {
		r.mu.Unlock()
		return
	}
	r.aborting = true
	done := r.done
	r.mu.Unlock()
	conn.SetReadDeadline(time.Unix(1, 0)) // as net/http: wake the read
	<-done
	conn.SetReadDeadline(time.Time{})
	r.mu.Lock()
	r.aborting = false
	r.mu.Unlock()
}
