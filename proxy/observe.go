package proxy

import (
	"bufio"
	"cmp"
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/metrics"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
)

// Every request, on the proxy port or inside a tunnel, passes through
// observe: it ends with one audit line, one metrics count and one entry in
// the status page's statistics, whatever answered it.

type auditSlotKey struct{}

// auditSlot collects what is known of a request while it is handled; its
// audit record is made from it when the request is done (finish).
type auditSlot struct {
	d        policy.Decision // the decision, when decided
	decided  bool            // false for requests refused before a decision
	upstream int             // the origin's status code, 0 if not forwarded
	status   int             // the status written on a hijacked connection, if any
	decision string          // and its X-Robotsgate-Decision
	permit   pacing.Permit
	paced    bool          // held for a Crawl-delay slot (permit.Sent applies)
	waited   time.Duration // held for the pacing slot
	// tunnel is what an intercepted CONNECT's tunnel became, when it
	// became something else than a tunnel of judged requests
	// (unknown-protocol, client-tls-failed); tunnelNote replaces the
	// decision's note.
	tunnel, tunnelNote string
	// unanswered: a transparent connection's opening, to which nothing
	// was sent (the record's status is 0).
	unanswered bool
	// body wraps the origin's response body (one allocation less per
	// request); upstreamErr is how that body failed, if it did.
	body        upstreamBody
	upstreamErr error
	reqBody     *idleBody // the client's request body, if any
	// sentAt is when the request's head was written to the origin (Unix
	// nanoseconds, 0: not measured), for its response time; pause is the
	// origin's pause its answer started or lengthened.
	sentAt atomic.Int64
	pause  *audit.Pause
	// released is when the request left the proxy for the origin, judged
	// and held (zero: it did not).
	released time.Time
	// signals are the AI-usage signals of the origin's response, for a
	// client with purposes (a refusing one is in d.Response); notes are
	// what the record's note adds to the decision's (a head not scanned, a
	// body cut off).
	signals []audit.UsageSignal
	notes   string
	// price is the crawler-price of the origin's 402 (pay per crawl) as
	// parsed, charged the crawler-charged of the paid retry's answer,
	// overcharged whether that is above the price, crawlerError an
	// origin's crawler-error.
	price, charged, crawlerError string
	overcharged                  bool
	rec                          audit.Record // made at the end (held here: one allocation less per request)
	w                            recordingWriter
}

// decide records the decision of the request and the pacing permit it holds.
func (s *auditSlot) decide(d *policy.Decision, permit pacing.Permit) {
	s.d, s.decided = *d, true
	s.permit, s.waited, s.paced = permit, d.Waited, d.Interval > 0
}

// wroteHeaders notes that the request's head has been written to the
// origin: the next paced request of its key may go (Permit.Sent), and its
// response time starts.
func (s *auditSlot) wroteHeaders() {
	s.sentAt.CompareAndSwap(0, time.Now().UnixNano())
	s.permit.Sent()
}

// refine records what an intercepted CONNECT's tunnel became
// (unknown-protocol, client-tls-failed). For a transparent connection,
// whose opening is not judged (each request in it is), it is the
// opening's decision, and nothing was answered.
func (s *auditSlot) refine(decision, note string) {
	switch {
	case s == nil:
	case s.decided:
		s.tunnel, s.tunnelNote = decision, note
	default:
		s.decision, s.tunnelNote, s.unanswered = decision, note, true
	}
}

// note replaces the note of an intercepted CONNECT's record.
func (s *auditSlot) note(note string) {
	if s != nil && s.decided {
		s.tunnelNote = note
	}
}

// addNote adds to what the record's note says.
func (s *auditSlot) addNote(note string) {
	if s.notes != "" {
		note = s.notes + "; " + note
	}
	s.notes = note
}

type viaKey struct{}

// viaOf says how the request of ctx arrived: through its tunnel, as the
// opening of a SOCKS5 or transparent connection (viaKey), or else on the
// proxy port.
func viaOf(ctx context.Context) string {
	if t, ok := tunnelOf(ctx); ok {
		return t.via
	}
	if v, ok := ctx.Value(viaKey{}).(string); ok {
		return v
	}
	return audit.ViaProxy
}

func auditSlotOf(ctx context.Context) *auditSlot {
	s, _ := ctx.Value(auditSlotKey{}).(*auditSlot)
	return s
}

// record makes the audit record of a decided request: what the decision
// tells, then what happened to it.
func (s *auditSlot) record(start time.Time, remoteAddr, method string) *audit.Record {
	s.rec = newAuditRecord(start, remoteAddr, method, &s.d)
	rec := &s.rec
	if s.tunnel != "" {
		rec.Decision = s.tunnel
	}
	if s.tunnelNote != "" {
		rec.Note = s.tunnelNote
	}
	rec.Usage = append(rec.Usage, s.signals...)
	rec.Pause = s.pause
	if s.notes != "" {
		rec.AddNote(s.notes)
	}
	return rec
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
		slot.addNote("the origin's body ended early (" + slot.upstreamErr.Error() + "): the response was aborted")
	case p != http.ErrAbortHandler:
		s.log.Error("panic serving a request", "panic", p)
	}
}

func (s *Server) finish(r *http.Request, rw *recordingWriter, slot *auditSlot, start time.Time) {
	slot.permit.Release()
	var rec *audit.Record
	if slot.decided {
		rec = slot.record(start, r.RemoteAddr, r.Method)
	} else {
		decision := cmp.Or(slot.decision, rw.Header().Get("X-Robotsgate-Decision"), audit.BadRequest)
		rec = &audit.Record{Time: start.UTC(), Client: r.RemoteAddr, Method: r.Method, URL: requestURL(r),
			UserAgent: r.UserAgent(), Decision: decision, Enforced: true, Note: slot.tunnelNote}
	}
	rec.Via = viaOf(r.Context())
	rec.UpstreamStatus = slot.upstream
	rec.WaitMS = float64(slot.waited.Microseconds()) / 1000
	// When the proxy let the request go: the pacing gate holds the next
	// request of a key until this one's head is written, so the gaps
	// between these times are never shorter than the interval either, and
	// a request let go before an answer paused its origin is not one sent
	// during the pause.
	if !slot.released.IsZero() {
		rec.SentMS = float64(slot.released.Sub(start).Microseconds()) / 1000
	}
	rec.CrawlerPrice, rec.CrawlerCharged = slot.price, slot.charged
	rec.CrawlerOvercharged, rec.CrawlerError = slot.overcharged, slot.crawlerError
	rec.Status, rec.Bytes = cmp.Or(slot.status, rw.status), rw.bytes+rw.hijacked.Load()
	if slot.unanswered {
		rec.Status = 0
	}
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	rec.Cap() // the status page keeps the latest records too, audit log or not
	s.writeAudit(rec)
	if admin.Monitored(rec) {
		s.metrics.CountRequest(metrics.MonitoredDecision, r.Method)
		s.metrics.MonitoredRequests.WithLabelValues(rec.Decision).Inc()
	} else {
		s.metrics.CountRequest(rec.Decision, r.Method)
	}
	if kind := slot.d.RefusedBy(); slot.decided && kind != "" {
		s.metrics.UsageRefusals.WithLabelValues(kind).Inc()
	}
	s.stats.Add(rec)
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
	// reqBody is the request's body as relayed, nil when it has none.
	reqBody *idleBody
}

// WriteHeader records the final status. It drops the origin's 100
// Continue when net/http's server has already sent one, as it does when
// the relay starts reading the body of a request with Expect:
// 100-continue: relayed, it would be a second 100 Continue (harmless, RFC
// 9110 §15.2, but a client only needs one), sent or not depending on which
// came first.
func (w *recordingWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.status = code // not the 1xx informational responses before it
	}
	if code == http.StatusContinue && w.reqBody != nil && w.reqBody.started.Load() {
		return
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
