package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Client connections, on the proxy port and inside intercepted tunnels, are
// served by a request loop of the proxy's own rather than by net/http's
// server. net/http's server starts a background read of the connection for
// every request without a body and aborts it before reading the next one (a
// deadline in the past, then a wait for the reading goroutine): two
// scheduler round trips on every request's critical path. Measured on the
// intercepted keep-alive benchmark, they cost about 6 % of the throughput
// and most of the p99 difference with goproxy.
//
// The loop keeps what the proxy relied on net/http's server for: the
// request head limit (431) and read timeouts, 400 for malformed requests,
// 505 for other HTTP versions, the checks RFC 9112 requires of a server (one
// valid Host), Expect: 100-continue, keep-alive and Connection: close,
// draining unread request bodies, hijacking (CONNECT, WebSocket upgrades),
// and a Shutdown that lets in-flight requests finish and closes idle
// connections. A request still in flight after disconnectAfter starts a
// background read, so that a client that leaves while its request is held
// (pacing) or while a slow origin answers cancels it, as under net/http;
// short requests never pay for it.

// disconnectAfter is how long a request runs before its tunnel is watched
// for the client leaving.
const disconnectAfter = 100 * time.Millisecond

// lingerTimeout bounds the reading after an error response (writeRaw).
const lingerTimeout = 500 * time.Millisecond

// maxDrainBytes is how much of an unread request body is read and discarded
// to keep the connection; beyond it the connection is closed (as net/http).
const maxDrainBytes = 256 << 10

// connServer serves the requests of client connections with a request
// loop each, and tracks the connections for Shutdown. The proxy has two: one
// for the proxy port, one for intercepted tunnels.
type connServer struct {
	handler http.Handler

	mu       sync.Mutex
	live     map[*connSession]struct{}
	listener net.Listener  // set by serveListener, closed by shutdown
	drained  chan struct{} // closed once shutting down and live is empty
	// shuttingDown is set by shutdown (under mu); sessions read it without
	// the lock on their hot path (responses then say "Connection: close").
	shuttingDown atomic.Bool
}

func newConnServer(h http.Handler) *connServer {
	return &connServer{handler: h, live: map[*connSession]struct{}{}, drained: make(chan struct{})}
}

// serveListener accepts connections on ln and serves each in a goroutine of
// its own, until shutdown (http.ErrServerClosed) or an accept error that is
// not temporary. It closes ln when it returns.
func (t *connServer) serveListener(ln net.Listener) error {
	defer ln.Close()
	t.mu.Lock()
	if t.shuttingDown.Load() {
		t.mu.Unlock()
		return http.ErrServerClosed
	}
	t.listener = ln
	t.mu.Unlock()
	var delay time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if t.shuttingDown.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: back off, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		go t.serve(conn, conn.RemoteAddr().String(), nil)
	}
}

func isTemporary(err error) bool {
	te, ok := err.(interface{ Temporary() bool })
	return ok && te.Temporary()
}

// serve runs the request loop of one connection until the client closes it,
// an error or timeout ends it, or Shutdown. remoteAddr is the client's
// address for the requests; info is the intercepted tunnel the connection
// is, nil on the proxy port. It closes conn unless a handler hijacked it.
func (t *connServer) serve(conn net.Conn, remoteAddr string, info *tunnelInfo) {
	ss := &connSession{srv: t, conn: conn, remoteAddr: remoteAddr, info: info, in: &connReader{conn: conn, limit: -1}}
	if !t.add(ss) {
		conn.Close()
		return
	}
	defer t.remove(ss)
	ss.run()
}

func (t *connServer) add(ss *connSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shuttingDown.Load() {
		return false
	}
	t.live[ss] = struct{}{}
	return true
}

func (t *connServer) remove(ss *connSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.live, ss)
	if t.shuttingDown.Load() && len(t.live) == 0 {
		close(t.drained)
	}
}

// Session states: shutdown closes an idle session's connection, and a busy
// one ends after its request.
const (
	sessionIdle int32 = iota
	sessionBusy
	sessionClosed
)

// startRequest marks ss busy; false if shutdown has closed it.
func (t *connServer) startRequest(ss *connSession) bool {
	return ss.state.CompareAndSwap(sessionIdle, sessionBusy)
}

// endRequest marks ss idle; false once shutdown has begun.
func (t *connServer) endRequest(ss *connSession) bool {
	ss.state.Store(sessionIdle)
	return !t.shuttingDown.Load()
}

// shutdown stops accepting, closes idle connections at once and busy ones
// when their request ends, waiting for them until ctx is done; then it
// closes the rest.
func (t *connServer) shutdown(ctx context.Context) error {
	t.mu.Lock()
	if !t.shuttingDown.Load() {
		t.shuttingDown.Store(true)
		if t.listener != nil {
			t.listener.Close()
		}
		if len(t.live) == 0 {
			close(t.drained)
		}
	}
	for ss := range t.live {
		if ss.state.CompareAndSwap(sessionIdle, sessionClosed) {
			ss.conn.Close()
		}
	}
	t.mu.Unlock()
	select {
	case <-t.drained:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	for ss := range t.live {
		ss.conn.Close()
	}
	t.mu.Unlock()
	return ctx.Err()
}

// connSession is one client connection's request loop.
type connSession struct {
	srv        *connServer
	conn       net.Conn
	remoteAddr string
	info       *tunnelInfo  // nil on the proxy port
	state      atomic.Int32 // sessionIdle, sessionBusy or sessionClosed
	in         *connReader
	timer      *time.Timer // arms the disconnect watch (startWatching)
	br         *bufio.Reader
	bw         *bufio.Writer
	header     http.Header // the responses' header map, reused (newConnResponse)
	// slot and resp are the current request's audit slot and response
	// writer, reused from request to request: nothing keeps them past it
	// (stats copies the records it keeps; the body fence stops the
	// transport's reads, see requestBody).
	slot auditSlot
	resp connResponse
}

var (
	connReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	connWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4096) }}
)

func (ss *connSession) run() {
	ss.br = connReaders.Get().(*bufio.Reader)
	ss.br.Reset(ss.in)
	ss.bw = connWriters.Get().(*bufio.Writer)
	ss.bw.Reset(ss.conn)
	hijacked := false
	defer func() {
		if !hijacked {
			ss.conn.Close()
			ss.br.Reset(nil)
			connReaders.Put(ss.br)
			ss.bw.Reset(nil)
			connWriters.Put(ss.bw)
		}
	}()
	ctx := context.Background()
	if ss.info != nil {
		ctx = context.WithValue(ctx, tunnelKey{}, ss.info)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for {
		req, ok := ss.readRequest()
		if !ok {
			return
		}
		var keep bool
		keep, hijacked = ss.serveRequest(ctx, req)
		if !keep || !ss.srv.endRequest(ss) {
			return
		}
	}
}

// readRequest waits (up to clientIdleTimeout) for the next request and
// reads its head (up to clientHeaderTimeout and maxHeaderBytes). A
// malformed request is answered here; ok is false when the loop ends.
func (ss *connSession) readRequest() (*http.Request, bool) {
	if ss.br.Buffered() == 0 {
		ss.conn.SetReadDeadline(time.Now().Add(clientIdleTimeout))
		if _, err := ss.br.Peek(1); err != nil {
			return nil, false // the client closed, idled out, or Shutdown
		}
	}
	if !ss.srv.startRequest(ss) {
		return nil, false
	}
	ss.conn.SetReadDeadline(time.Now().Add(clientHeaderTimeout))
	ss.in.limit = maxHeaderBytes + 4096 // as net/http: a margin for the request line
	req, err := http.ReadRequest(ss.br)
	ss.in.limit = -1
	ss.conn.SetReadDeadline(time.Time{})
	if err != nil {
		ss.refuseMalformed(err)
		return nil, false
	}
	if req.ProtoMajor != 1 {
		ss.writeRaw("505 HTTP Version Not Supported", "unsupported protocol version")
		return nil, false
	}
	if msg := checkRequestHead(req); msg != "" {
		ss.writeRaw("400 Bad Request", msg)
		return nil, false
	}
	req.RemoteAddr = ss.remoteAddr
	return req, true
}

// checkRequestHead applies the checks net/http's server makes after
// parsing (RFC 9112 §3.2: a request without a Host, or with an invalid one,
// is answered 400; so are invalid field names and values). Several Host
// fields are refused earlier, by the framing guard, because ReadRequest
// keeps only the first.
func checkRequestHead(req *http.Request) string {
	switch {
	case req.ProtoAtLeast(1, 1) && req.Host == "":
		return "missing required Host header"
	case !httpguts.ValidHostHeader(req.Host):
		return "malformed Host header"
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return "invalid header name"
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return "invalid header value"
			}
		}
	}
	return ""
}

// refuseMalformed answers a request head that could not be read, unless the
// connection itself failed.
func (ss *connSession) refuseMalformed(err error) {
	var opErr *net.OpError // not net.Error: a malformed URL's *url.Error is one
	switch {
	case ss.in.hitLimit:
		ss.writeRaw("431 Request Header Fields Too Large", "431 Request Header Fields Too Large")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, net.ErrClosed), errors.As(err, &opErr):
		// nothing to answer: the client closed, stalled or reset
	default:
		ss.writeRaw("400 Bad Request", "400 Bad Request")
	}
}

// writeRaw writes a final plain-text response (with its length, so the
// client need not wait for the close). The connection is then closed, after
// reading for a moment what the client is still sending (as net/http does):
// closing with unread data makes the kernel reset the connection, and the
// client may lose the response.
func (ss *connSession) writeRaw(status, body string) {
	ss.conn.SetWriteDeadline(time.Now().Add(time.Second))
	ss.bw.WriteString("HTTP/1.1 " + status + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body)
	if ss.bw.Flush() != nil {
		return
	}
	ss.in.limit = -1
	ss.conn.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, ss.br, maxDrainBytes)
}

// serveRequest runs the handler for req and finishes its response. keep
// reports whether the connection can carry another request; hijacked that
// the handler took it.
func (ss *connSession) serveRequest(ctx context.Context, req *http.Request) (keep, hijacked bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss.slot = auditSlot{}
	req = req.WithContext(context.WithValue(ctx, auditSlotKey{}, &ss.slot))
	w := newConnResponse(ss, req)
	if req.Header.Get("Expect") != "" {
		if !req.ProtoAtLeast(1, 1) || !strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			ss.writeRaw("417 Expectation Failed", "")
			return false, false
		}
		if req.ContentLength != 0 {
			req.Body = &continueReader{ReadCloser: req.Body, w: w}
		}
		req.Header.Del("Expect")
	}
	var body *requestBody
	if req.Body != nil && req.Body != http.NoBody {
		body = &requestBody{inner: req.Body, onEOF: ss.in.bodyRead}
		req.Body = body
	}
	ss.startWatching(cancel, body == nil)
	ss.srv.handler.ServeHTTP(w, req)
	if w.hijacked {
		return false, true
	}
	ss.stopWatching()
	keep = w.finish() && !req.Close
	if body != nil {
		body.Close() // the transport may still be reading it: this fences it off
		keep = keep && body.complete()
	}
	return keep, false
}

// startWatching arms the disconnect watch of a request: once it has run for
// disconnectAfter and its body is read, a background read notices the
// client leaving.
func (ss *connSession) startWatching(cancel context.CancelFunc, bodyRead bool) {
	ss.in.arm(cancel, bodyRead)
	if ss.timer == nil {
		ss.timer = time.AfterFunc(disconnectAfter, ss.in.due)
	} else {
		ss.timer.Reset(disconnectAfter)
	}
}

// stopWatching ends the watch before the connection is read again or
// handed over.
func (ss *connSession) stopWatching() {
	ss.timer.Stop()
	ss.in.disarm(ss.conn)
}
