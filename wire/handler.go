package wire

import (
	"bufio"
	"context"
	"net"
	"net/http"
)

type guardKey struct{}

// WithGuard returns ctx with c's framing guard, if c is a *FramingGuard:
// a server's ConnContext calls it, so that GuardFraming and GuardOf find
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

// Refuse writes the answer to a request the framing guard refused: the
// status (400, or 431 for a head over the limit) and a sentence for the
// client. The response's header already says "Connection: close".
type Refuse func(w http.ResponseWriter, r *http.Request, status int, message string)

// GuardFraming wraps a handler: it answers the framing guard's stand-in for
// a refused request (ambiguous framing, several Host fields, obs-fold) with
// refuse, and makes every response on a connection the guard no longer
// reads heads of (after a request with a Transfer-Encoding, which net/http
// may read as chunked or, in HTTP/1.0, not at all: RFC 9112 §6.1) end that
// connection. A request that carries RefuseHeader on a connection without
// a guard (HTTP/2) is refused as well.
func GuardFraming(h http.Handler, refuse Refuse) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := r.Header.Get(RefuseHeader); reason != "" {
			msg, ok := refuseMessages[reason]
			if !ok { // a client sent the header itself
				msg = "The request has a header field reserved for robotsgate (" + RefuseHeader + ")."
			}
			status := http.StatusBadRequest
			if reason == refuseTooLarge {
				status = http.StatusRequestHeaderFieldsTooLarge
			}
			w.Header().Set("Connection", "close")
			refuse(w, r, status, msg)
			return
		}
		if g := GuardOf(r.Context()); g != nil && !g.watching() || len(r.TransferEncoding) > 0 {
			w = closeAfterResponse{w}
		}
		h.ServeHTTP(w, r)
	})
}
