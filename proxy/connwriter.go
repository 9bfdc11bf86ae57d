package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// connResponse is the http.ResponseWriter of a request inside an
// intercepted tunnel. Like net/http's, it writes the head when the body
// starts (or the handler returns), frames the body by the handler's
// Content-Length or else chunked (RFC 9112 §6-7), never sends a body where
// none is allowed (HEAD, 1xx, 204, 304), and supports Flush and Hijack.
type connResponse struct {
	ss     *connSession
	req    *http.Request
	bw     *bufio.Writer
	header http.Header

	// mu orders the head against a "100 Continue" sent from the goroutine
	// that reads the request body (the upstream transport's).
	mu          sync.Mutex
	wroteHeader bool
	committed   bool // the head is in bw
	status      int

	bodyAllowed   bool
	contentLength int64 // declared by the handler; -1 if none
	written       int64
	chunked       bool
	closeAfter    bool
	hijacked      bool
	trailerNames  []string // announced in the head's "Trailer"
	err           error    // a failed write: the connection is broken
}

// newConnResponse starts the response to req in the session's reused
// writer and header map (handlers do not keep them past their return).
func newConnResponse(ss *connSession, req *http.Request) *connResponse {
	if ss.header == nil {
		ss.header = make(http.Header, 8)
	}
	clear(ss.header)
	ss.resp = connResponse{ss: ss, req: req, bw: ss.bw, header: ss.header, contentLength: -1}
	return &ss.resp
}

func (w *connResponse) Header() http.Header { return w.header }

// WriteHeader records the status; the head is written with the first body
// byte, a Flush, or when the handler returns. Informational statuses other
// than 101 are written at once and do not count as the response.
func (w *connResponse) WriteHeader(code int) {
	if w.hijacked || w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		code = http.StatusInternalServerError // a handler bug; net/http would panic
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.mu.Lock()
		w.writeHead(code, false)
		w.mu.Unlock()
		w.bw.Flush()
		return
	}
	w.wroteHeader, w.status = true, code
}

func (w *connResponse) Write(p []byte) (int, error) {
	if err := w.start(); err != nil {
		return 0, err
	}
	if !w.bodyAllowed {
		if w.req.Method == http.MethodHead {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	n, err := w.writeBody(p)
	w.written += int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

func (w *connResponse) writeBody(p []byte) (int, error) {
	if !w.chunked || len(p) == 0 {
		return w.bw.Write(p)
	}
	var size [20]byte
	w.bw.Write(strconv.AppendInt(size[:0], int64(len(p)), 16))
	w.bw.WriteString("\r\n")
	n, err := w.bw.Write(p)
	if err == nil {
		_, err = w.bw.WriteString("\r\n")
	}
	return n, err
}

// copyBufs are ReadFrom's buffers (io.Copy would allocate 32 KiB per
// response).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFrom copies a body (an origin's response) through Write with a
// pooled buffer.
func (w *connResponse) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	return io.CopyBuffer(writerOnly{w}, r, *buf)
}

// writerOnly hides ReadFrom from io.CopyBuffer, which would call it again.
type writerOnly struct{ io.Writer }

// start writes the head if the handler has not; the error is one that
// ends writing.
func (w *connResponse) start() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if w.err != nil {
		return w.err
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	return nil
}

// commit writes the head of the final response into bw, deciding how the
// body is framed. final means the handler has returned, so a body of
// unknown length is known to be empty.
func (w *connResponse) commit(final bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.committed = true
	h, code := w.header, w.status
	w.bodyAllowed = w.req.Method != http.MethodHead && code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
	h.Del("Transfer-Encoding") // the framing is decided here
	if cl := h.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.contentLength = n
		} else {
			h.Del("Content-Length")
		}
	}
	w.trailerNames = trailerNames(h)
	trailers := w.bodyAllowed && len(w.trailerNames) > 0
	switch {
	case code < 200 || code == http.StatusNoContent: // RFC 9110 §8.6: no Content-Length
		h.Del("Content-Length")
		w.contentLength = -1
	case !w.bodyAllowed:
	case trailers && w.req.ProtoAtLeast(1, 1):
		h.Del("Content-Length")
		w.contentLength, w.chunked = -1, true
	case w.contentLength >= 0:
	case final:
		w.contentLength = 0
		h.Set("Content-Length", "0")
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
	default:
		w.closeAfter = true // HTTP/1.0: the body ends with the connection
	}
	if w.chunked {
		h.Set("Transfer-Encoding", "chunked")
	}
	if w.req.Close || !w.req.ProtoAtLeast(1, 1) || w.ss.srv.shuttingDown.Load() || httpHeaderHasToken(h, "Connection", "close") {
		w.closeAfter = true
		h.Set("Connection", "close")
	}
	w.writeHead(code, true)
}

// writeHead writes a status line and the header into bw. Callers hold mu.
func (w *connResponse) writeHead(code int, final bool) {
	var line [64]byte
	b := append(line[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	if text := http.StatusText(code); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	b = append(b, "\r\n"...)
	if final && w.header.Get("Date") == "" {
		b = append(b, "Date: "...)
		b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
		b = append(b, "\r\n"...)
	}
	w.bw.Write(b)
	if err := w.header.WriteSubset(w.bw, trailerPrefixed(w.header)); err != nil {
		w.err = err
	}
	w.bw.WriteString("\r\n")
}

// trailerPrefixed excludes the http.TrailerPrefix keys from the head; they
// are sent after a chunked body.
func trailerPrefixed(h http.Header) map[string]bool {
	var ex map[string]bool
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			if ex == nil {
				ex = map[string]bool{}
			}
			ex[k] = true
		}
	}
	return ex
}

func httpHeaderHasToken(h http.Header, key, token string) bool {
	for _, v := range h[key] {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

// Flush sends what is buffered, the head included.
func (w *connResponse) Flush() { w.FlushError() }

// FlushError is Flush with its error (http.ResponseController).
func (w *connResponse) FlushError() error {
	if err := w.start(); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
		return err
	}
	return nil
}

// Hijack hands the connection to the handler (a WebSocket upgrade), after
// the head it wrote, if any, is sent.
func (w *connResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.wroteHeader && !w.committed {
		w.commit(false)
	}
	if err := w.bw.Flush(); err != nil {
		return nil, nil, err
	}
	w.ss.stopWatching()
	w.hijacked = true
	return w.ss.conn, bufio.NewReadWriter(w.ss.br, w.bw), nil
}

// finish completes the response after the handler returned. It reports
// whether the connection can carry the next request.
func (w *connResponse) finish() bool {
	if w.start() != nil {
		return false
	}
	if w.chunked {
		w.bw.WriteString("0\r\n")
		w.writeTrailers()
		w.bw.WriteString("\r\n")
	}
	if w.bodyAllowed && w.contentLength >= 0 && w.written != w.contentLength {
		w.closeAfter = true // the client cannot find the next response
	}
	if err := w.bw.Flush(); err != nil {
		return false
	}
	return !w.closeAfter
}

// trailerNames returns the field names a "Trailer" header announces. They
// are taken when the head is written: a handler may replace the whole
// header map afterwards (goproxy does) before setting the trailers' values.
func trailerNames(h http.Header) []string {
	var names []string
	for _, v := range h["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				names = append(names, http.CanonicalHeaderKey(name))
			}
		}
	}
	return names
}

// writeTrailers writes the trailer fields: the announced ones and those set
// with http.TrailerPrefix.
func (w *connResponse) writeTrailers() {
	trailer := http.Header{}
	for _, name := range w.trailerNames {
		if vv, ok := w.header[name]; ok {
			trailer[name] = vv
		}
	}
	for k, vv := range w.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			trailer[http.CanonicalHeaderKey(k[len(http.TrailerPrefix):])] = vv
		}
	}
	if len(trailer) > 0 {
		trailer.Write(w.bw)
	}
}
