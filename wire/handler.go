package wire

import (
	"bufio"
	"context"
	"net"
	"net/http"
)

type guardKey struct{}

// WithGuard returns ctx with c's framing guard, if c is a *FramingGuard:
// a server's ConnContext calls it, so that CloseAfter and GuardOf find
// the guard of a request's connection. Any other connection (HTTP/2 over
// TLS, which frames its messages itself) leaves ctx as it is.
func WithGuard(ctx context.Context, c net.Conn) context.Context {
	if g, ok := c.(*FramingGuard); ok {
		ctx = context.WithValue(ctx, guardKey{}, g)
	}
	return ctx
}

// GuardOf returns the framing guard WithGuard put in ctx, or nil.
func GuardOf(ctx context.Context) *FramingGuard {
	g, _ := ctx.Value(guardKey{}).(*FramingGuard)
	return g
}

// closeAfterResponse marks the response "Connection: close" at the last
// moment (a relay replaces the header map's contents before writing it).
// The proxy uses it once the framing guard has stopped reading heads on a
// connection, so that no further request can follow unchecked.
type closeAfterResponse struct{ http.ResponseWriter }

func (w closeAfterResponse) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w closeAfterResponse) Write(p []byte) (int, error) {
	if w.Header().Get("Connection") == "" {
		w.Header().Set("Connection", "close")
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush, Hijack and deadlines.
func (w closeAfterResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w closeAfterResponse) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w closeAfterResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Refused reports whether r is the framing guard's stand-in for a request
// it refused (ambiguous framing, several Host fields, obs-fold, a head
// over the limit), with the status to answer (400, or 431 for a head over
// the limit) and a sentence for the client. A request that carries
// RefuseHeader on a connection without a guard (HTTP/2) is refused as
// well. The handler answers it "Connection: close".
func Refused(r *http.Request) (status int, message string, refused bool) {
	reason := r.Header.Get(RefuseHeader)
	if reason == "" {
		return 0, "", false
	}
	msg, ok := refuseMessages[reason]
	if !ok { // a client sent the header itself
		msg = "The request has a header field reserved for robotsgate (" + RefuseHeader + ")."
	}
	status = http.StatusBadRequest
	if reason == refuseTooLarge {
		status = http.StatusRequestHeaderFieldsTooLarge
	}
	return status, msg, true
}

// CloseAfter returns w, made to end its connection after the response when
// the framing guard no longer reads heads on r's connection (after a
// request with a Transfer-Encoding, which net/http may read as chunked or,
// in HTTP/1.0, not at all: RFC 9112 §6.1).
func CloseAfter(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if g := GuardOf(r.Context()); g != nil && !g.watching() || len(r.TransferEncoding) > 0 {
		return closeAfterResponse{w}
	}
	return w
}
