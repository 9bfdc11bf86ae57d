package wire

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
)

// FramingGuard sits between a client connection and net/http's server and
// refuses requests whose framing is ambiguous: both Content-Length and
// Transfer-Encoding (RFC 9112 §6.3: "ought to be handled as an error", the
// classic request-smuggling vector). net/http would accept such a request,
// drop the Content-Length and forward it; here the server is handed a
// stand-in request instead, the client gets a 400 and the connection is
// closed, so nothing of it reaches an origin. Heads with several Host
// fields (RFC 9112 §3.2: 400) and with obs-fold, a field line continued on
// the next (RFC 9112 §5.2: 400 or unfold; the guard would otherwise read
// "Content-Length:" on one line and net/http the length on the next), are
// refused the same way.
//
// It reads each request head whole before the server sees it and skips
// bodies of known length. It stops reading heads after a request with a
// Transfer-Encoding (whose response then ends the connection, see
// CloseAfter), after a CONNECT, and when the connection is handed over
// (StopWatching: a WebSocket after its 101).
//
// The guard is half of the defence: the server behind it must serve its
// requests through Refused and CloseAfter and put the guard in their
// context (WithGuard, from the server's ConnContext): it answers the
// stand-ins and closes the connection once the guard no longer reads its
// heads.
type FramingGuard struct {
	net.Conn
	maxHead int

	mu      sync.Mutex
	buf     *[]byte // from headBufs, reused for reading heads (pending is empty when it is)
	pending []byte  // bytes judged and not yet handed to the server
	carry   []byte  // bytes read past a body: the start of the next head
	skip    int64   // body bytes of the current request still to pass
	blind   bool    // stopped watching (after a chunked request or an oversized head)
	refused bool
	// unwatched mirrors blind for watching, which must not wait for mu: a
	// Read holds it while it blocks (net/http's background read).
	unwatched atomic.Bool
}

// MaxHeadBytes is the proxy's limit on a request head (request line and
// fields): a longer head is answered 431 and never read further.
const MaxHeadBytes = 1 << 20

// NewFramingGuard returns c guarded: the guard passes request heads of at
// most maxHead bytes (MaxHeadBytes but in tests) and the bodies after them
// to whoever reads it, a stand-in request in place of a head it refuses.
func NewFramingGuard(c net.Conn, maxHead int) *FramingGuard {
	return &FramingGuard{Conn: c, maxHead: maxHead}
}

// headBufs recycles the guards' head buffers: most connections need one for
// a single head (a CONNECT) or until they end, and a new TLS connection per
// request would otherwise allocate two.
var headBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// releaseBuf returns the head buffer to the pool once nothing aliases it.
func (g *FramingGuard) releaseBuf() {
	if g.buf != nil && len(g.pending) == 0 && len(g.carry) == 0 {
		headBufs.Put(g.buf)
		g.buf = nil
	}
}

// Read returns the client's bytes as the guard judged them: whole request
// heads it accepts, the bodies they announce, a stand-in request for a head
// it refuses (then EOF), and the connection's bytes unread once it stopped
// watching. A timeout of the connection's read deadline keeps a partial
// head for the next Read.
func (g *FramingGuard) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case len(g.pending) > 0:
		n := copy(p, g.pending)
		g.pending = g.pending[n:]
		if g.blind || g.refused {
			g.releaseBuf() // no more heads to read
		}
		return n, nil
	case g.refused:
		return 0, io.EOF
	case g.blind:
		return g.Conn.Read(p)
	case g.skip > 0:
		if int64(len(p)) > g.skip {
			p = p[:g.skip]
		}
		n, err := g.Conn.Read(p)
		g.skip -= int64(n)
		return n, err
	}
	if err := g.readHead(); err != nil {
		return 0, err
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// readHead reads until a whole request head is buffered and judges it.
func (g *FramingGuard) readHead() error {
	if g.buf == nil {
		g.buf = headBufs.Get().(*[]byte)
	}
	head := append((*g.buf)[:0], g.carry...)
	g.carry = nil
	defer func() {
		switch {
		case cap(head) > 64<<10:
			g.buf = nil // too big to keep or pool
		case len(head) == 0 && len(g.pending) == 0:
			*g.buf = head[:0]
			g.releaseBuf() // the connection ended between requests
		default:
			*g.buf = head[:0] // pending and carry alias it: both are consumed before the next head
		}
	}()
	for {
		end := headEnd(head)
		if end >= 0 && end <= g.maxHead {
			g.judge(head[:end], head[end:])
			return nil
		}
		if end > g.maxHead || len(head) > g.maxHead {
			// Answered 431 by the proxy (net/http's own 431 would lack the
			// decision headers); the rest of the head is never read.
			g.refused, g.pending = true, standInRequest(refuseTooLarge)
			return nil
		}
		head = slices.Grow(head, 4096)
		n, err := g.Conn.Read(head[len(head):cap(head)])
		head = head[:len(head)+n]
		if err != nil {
			var ne net.Error
			switch {
			case len(head) == 0:
				return err
			case errors.As(err, &ne) && ne.Timeout():
				// A deadline (net/http interrupting its background read):
				// keep the partial head and go on judging it next time.
				g.carry = append([]byte(nil), head...)
				return err
			}
			g.blind, g.pending = true, head // a partial head before EOF: the server's to reject
			g.unwatched.Store(true)
			return nil
		}
	}
}

// headEnd returns the length of the head in b (up to and including the
// blank line), or -1 if it is not complete. Lines end at LF with or without
// a CR before it, as net/http reads them (RFC 9112 §2.2 lets a recipient
// accept a bare LF; reading lines any other way than the server would let a
// request hide headers from this guard). Blank lines before a request line
// are skipped, as servers do.
func headEnd(b []byte) int {
	start := 0
	for start < len(b) && (b[start] == '\r' || b[start] == '\n') {
		start++
	}
	for i := start; i < len(b); {
		nl := bytes.IndexByte(b[i:], '\n')
		if nl < 0 {
			return -1
		}
		line := b[i : i+nl]
		i += nl + 1
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			return i
		}
	}
	return -1
}

// nextLine splits the first line (without its CR LF or LF) off b.
func nextLine(b []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest
}

// RefuseHeader marks the stand-in request the guard hands the server in place
// of an ambiguous one: the server answers it in turn, after the responses to
// earlier pipelined requests (writing on the connection from here would cut
// into them), and Refused turns it into the 400. A client that sends
// the field itself is refused too: it never reaches an origin.
const RefuseHeader = "X-Robotsgate-Refuse"

// The stand-in requests, by reason (the value of RefuseHeader).
const (
	refuseAmbiguous = "ambiguous-framing"
	refuseHosts     = "several-hosts"
	refuseFolded    = "obs-fold"
	refuseTooLarge  = "head-too-large"
)

// refuseMessages explain the refusals to the client, by reason.
var refuseMessages = map[string]string{
	refuseAmbiguous: "The request has both Content-Length and Transfer-Encoding headers (ambiguous framing).",
	refuseHosts:     "The request has more than one Host header.",
	refuseFolded:    "The request continues a header line on the next line (obs-fold, RFC 9112 §5.2).",
	refuseTooLarge:  "The request head is larger than 1 MiB.", // MaxHeadBytes,
}

func standInRequest(reason string) []byte {
	return []byte("GET / HTTP/1.1\r\nHost: robotsgate.invalid\r\n" + RefuseHeader + ": " + reason + "\r\nConnection: close\r\n\r\n")
}

// judge decides what follows a complete head: refusal, a body of known
// length (then the next head), or blindness after a chunked body.
func (g *FramingGuard) judge(head, rest []byte) {
	f := framing(head)
	reason := ""
	switch {
	case f.ambiguous:
		reason = refuseAmbiguous
	case f.hosts > 1:
		reason = refuseHosts // RFC 9112 §3.2: a server MUST answer 400
	case f.folded:
		reason = refuseFolded
	}
	if reason != "" {
		// The stand-in is answered in its turn, after the requests before
		// it: the connection stays watched until then.
		g.refused, g.pending = true, standInRequest(reason)
		return
	}
	g.pending = head
	if f.chunked || f.tunnel {
		g.unwatched.Store(true)
		// After a chunked body (or a Transfer-Encoding net/http ignores, in
		// HTTP/1.0), or once a CONNECT turns the connection into a tunnel,
		// there are no more heads to find.
		g.blind = true
		g.pending = append(g.pending, rest...)
		return
	}
	body := min(int64(len(rest)), f.contentLength)
	g.pending = append(g.pending, rest[:body]...)
	g.skip = f.contentLength - body
	g.carry = rest[body:]
}

// headFraming is what a request head says about where the request ends.
type headFraming struct {
	contentLength int64
	chunked       bool // a Transfer-Encoding: the body's end is unknowable here
	ambiguous     bool // both Content-Length and Transfer-Encoding
	tunnel        bool // a CONNECT: no more heads follow
	hosts         int  // Host field lines
	folded        bool // a field line continued on the next (obs-fold)
}

// framing reads the framing headers of a request head without allocating:
// it runs on every request.
func framing(head []byte) headFraming {
	var f headFraming
	requestLine, rest := nextLine(bytes.TrimLeft(head, "\r\n"))
	f.tunnel = bytes.HasPrefix(requestLine, []byte("CONNECT "))
	hasCL, hasTE := false, false
	for len(rest) > 0 {
		var line []byte
		line, rest = nextLine(rest)
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			f.folded = true
			continue
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		switch {
		case !ok:
		case asciiEqualFold(name, "content-length"):
			hasCL = true
			f.contentLength = parseLength(bytes.Trim(value, " \t\r\n"))
		case asciiEqualFold(name, "transfer-encoding"):
			hasTE, f.chunked = true, true
		case asciiEqualFold(name, "host"):
			f.hosts++
		}
	}
	f.ambiguous = hasCL && hasTE
	return f
}

// asciiEqualFold compares a header name with a lower-case name.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// parseLength reads a Content-Length value within the limits net/http
// applies (strconv.ParseUint(v, 10, 63): decimal digits only, at most
// 2^63-1). Anything else is 0 here: net/http refuses the request itself.
// A value accepted here and not there, or the other way round, would let
// a body be read as a request head, so FuzzFramingAgreesWithNetHTTP
// compares the two.
func parseLength(v []byte) int64 {
	if len(v) == 0 {
		return 0
	}
	var n int64
	for _, c := range v {
		d := int64(c - '0')
		if c < '0' || c > '9' || n > (math.MaxInt64-d)/10 {
			return 0
		}
		n = n*10 + d
	}
	return n
}

// watching reports whether the guard still reads the connection's request
// heads.
// A refused head does not count: its stand-in still comes in its turn.
func (g *FramingGuard) watching() bool { return !g.unwatched.Load() }

// StopWatching hands the connection over (a WebSocket after its 101): what
// the guard has read ahead is passed on, then the connection's bytes as
// they come. The caller must own the connection's reads (net/http's Hijack
// has ended its background read), or this waits for the read in progress.
func (g *FramingGuard) StopWatching() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unwatched.Store(true)
	if g.blind {
		return
	}
	g.blind = true
	if g.skip > 0 {
		return // a body still streaming: no head was read ahead
	}
	g.pending = append(g.pending, g.carry...)
	g.carry = nil
}
