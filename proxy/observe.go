package proxy

import (
	"bufio"
	"cmp"
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
)

// Every request, on the proxy port or inside a tunnel, passes through
// observe: it ends with one audit line, one metrics count and one entry in
// the status page's statistics, whatever answered it.

type auditSlotKey struct{}

// auditSlot collects what is known of a request while it is handled.
type auditSlot struct {
	rec      audit.Record // set by the decision (held here: one allocation less per request)
	decided  bool         // rec is set; false for requests refused before a decision
	upstream int          // the origin's status code, 0 if not forwarded
	status   int          // the status written on a hijacked connection, if any
	decision string       // and its X-Robotsgate-Decision
	permit   pacing.Permit
	paced    bool          // held for a Crawl-delay slot (permit.Sent applies)
	waited   time.Duration // held for the pacing slot
	// body wraps the origin's response body (one allocation less per
	// request); upstreamErr is how that body failed, if it did.
	body        upstreamBody
	upstreamErr error
	reqBody     *idleBody // the client's request body, if any
	// purposes are the client's purposes the origin's response is judged
	// for (Decision.ResponsePurposes); nil for most clients.
	purposes []string
	// refusedBy is the kind of signal that refused the request
	// (audit.SignalKinds), for robotsgate_usage_refusals_total.
	refusedBy string
	w         recordingWriter
}

// refine changes the decision recorded for a CONNECT once it is known what
// the tunnel became (unknown-protocol, client-tls-failed).
func (s *auditSlot) refine(decision, note string) {
	if s != nil && s.decided {
		s.rec.Decision, s.rec.Note = decision, note
	}
}

// note replaces the recorded decision's note.
func (s *auditSlot) note(note string) {
	if s != nil && s.decided {
		s.rec.Note = note
	}
}

func auditSlotOf(ctx context.Context) *auditSlot {
	s, _ := ctx.Value(auditSlotKey{}).(*auditSlot)
	return s
}

// recordDecision stores the decision's record for the end of the request.
func recordDecision(req *http.Request, start time.Time, d *policy.Decision) {
	if slot := auditSlotOf(req.Context()); slot != nil {
		slot.rec, slot.decided = newAuditRecord(start, req.RemoteAddr, req.Method, d), true
		slot.purposes, slot.refusedBy = d.ResponsePurposes(), d.RefusedBy()
	}
}

// observe wraps the handler of the proxy port and of every tunnel's server.
func (s *Server) observe(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		slot := &auditSlot{}
		r = r.WithContext(context.WithValue(r.Context(), auditSlotKey{}, slot))
		slot.w = recordingWriter{ResponseWriter: w, status: http.StatusOK, guard: guardOf(r.Context())}
		rw := &slot.w // one allocation for both
		defer func() {
			// A relay that aborts the response (http.ErrAbortHandler: the
			// origin's body ended early, the client left) or a bug: the
			// request is audited all the same, then net/http's server
			// closes the connection or resets the stream.
			if p := recover(); p != nil {
				s.aborted(rw, slot, p)
				s.finish(r, rw, slot, start)
				panic(p)
			}
		}()
		h.ServeHTTP(rw, r)
		s.finish(r, rw, slot, start)
	})
}

// aborted records why a response was cut off.
func (s *Server) aborted(rw *recordingWriter, slot *auditSlot, p any) {
	rw.aborted = true
	switch {
	case slot.upstreamErr != nil:
		s.metrics.UpstreamErrors.WithLabelValues("http_response_incomplete").Inc()
		s.log.Info("upstream body ended early: the client's response is aborted", "err", slot.upstreamErr)
		slot.note("the origin's body ended early (" + slot.upstreamErr.Error() + "): the response was aborted")
	case p != http.ErrAbortHandler:
		s.log.Error("panic serving a request", "panic", p)
	}
}

func (s *Server) finish(r *http.Request, rw *recordingWriter, slot *auditSlot, start time.Time) {
	slot.permit.Release()
	rec := &slot.rec
	if !slot.decided {
		decision := cmp.Or(slot.decision, rw.Header().Get("X-Robotsgate-Decision"), audit.BadRequest)
		rec = &audit.Record{Time: start.UTC(), Client: r.RemoteAddr, Method: r.Method, URL: requestURL(r),
			UserAgent: r.UserAgent(), Decision: decision, Enforced: true}
	}
	rec.UpstreamStatus = slot.upstream
	rec.WaitMS = float64(slot.waited.Microseconds()) / 1000
	rec.Status, rec.Bytes = cmp.Or(slot.status, rw.status), rw.bytes+rw.hijacked.Load()
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.auditLog.Write(rec)
	s.metrics.CountRequest(rec.Decision, r.Method)
	if slot.refusedBy != "" {
		s.metrics.UsageRefusals.WithLabelValues(slot.refusedBy).Inc()
	}
	s.stats.add(rec)
}

// recordingWriter remembers the status and counts the body bytes, also
// those written on a hijacked connection (a WebSocket). It implements
// http.Hijacker and http.Flusher itself, because goproxy asserts them
// directly (CONNECT).
type recordingWriter struct {
	http.ResponseWriter
	status   int
	bytes    int64
	hijacked atomic.Int64
	aborted  bool
	guard    *framingGuard // the connection's, nil for HTTP/2
}

func (w *recordingWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.status = code // not the 1xx informational responses before it
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *recordingWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// Hijack hands the connection over: the framing guard stops reading heads
// on it, and what the server had read ahead of it comes first.
func (w *recordingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if w.guard != nil {
		w.guard.stopWatching()
	}
	c := &hijackedConn{prefixConn: prefixConn{Conn: conn, prefix: buffered(brw)}, written: &w.hijacked}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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

// requestURL is how the audit names a request refused before a decision:
// a CONNECT by its authority (host:port, RFC 9110 §9.3.6), not "//host:port".
func requestURL(r *http.Request) string {
	if r.Method == http.MethodConnect {
		return r.Host
	}
	return r.URL.String()
}
