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
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/upstream"
	"github.com/robotsgate/robotsgate/wire"
)

// Every request and every tunnel's opening has one record, created by the
// way in it came through (observe for the proxy port and the requests
// inside tunnels, which a CONNECT on the proxy port is one of; opening for
// a SOCKS5 CONNECT and a transparent connection), passed on explicitly to
// what judges and answers it, and written when it is done (finish): one
// audit line, one metrics count and one entry in the status page's
// statistics, whatever answered it. Only the code that net/http,
// httputil.ReverseProxy and goproxy call with nothing but the request
// (ModifyResponse, ErrorHandler, the upstream transport; the CONNECT
// handler, dial hook and error handler) reaches it through the request's
// context (withRecord).

// record is what is known of one request, or one tunnel's opening, while
// it is handled.
type record struct {
	start time.Time
	via   string // how it arrived (audit.Via...)
	// client and authority name an opening (a CONNECT to authority); a
	// request is named by its decision, or by what it said when it was
	// answered before one (finish).
	client, authority string
	d                 policy.Decision // the decision, when decided
	decided           bool            // false for requests refused before a decision
	// refusal is what robotsgate answered instead of the origin, if it
	// did; status the status it wrote on a hijacked connection or a
	// non-HTTP edge, which the writer does not see (a refused CONNECT,
	// SOCKS5 or transparent opening, a 101).
	refusal *refusal.Refusal
	status  int
	// became is what an opening's tunnel became, when it became something
	// else than a tunnel of judged requests (unknown-protocol,
	// client-tls-failed, bad-request); tunnelNote replaces the decision's
	// note. unanswered: a transparent connection's opening, which is not
	// judged and to which nothing was sent (the record's status is 0).
	became, tunnelNote string
	unanswered         bool
	permit             pacing.Permit
	paced              bool          // held for a Crawl-delay slot (permit.Sent applies)
	waited             time.Duration // held for the pacing slot
	reqBody            *idleBody     // the client's request body, if any
	// released is when, after start, the request left the proxy for the
	// origin, judged and held (zero: it did not).
	released time.Duration
	// signals are the AI-usage signals of the origin's response, for a
	// client with purposes (a refusing one is in d.Response); notes are
	// what the record's note adds to the decision's (a head not scanned, a
	// body cut off).
	signals []audit.UsageSignal
	notes   string
	// up is what the upstream side was given and recorded of the request.
	up  upstream.Exchange
	rec audit.Record // made at the end (held here: one allocation less per request)
	w   recordingWriter
}

type recordKey struct{}

// withRecord gives ctx the record of its request, for the code net/http,
// httputil.ReverseProxy and goproxy call with nothing else (see above).
func withRecord(ctx context.Context, rec *record) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

// recordOf is the record withRecord gave ctx, nil when none.
func recordOf(ctx context.Context) *record {
	rec, _ := ctx.Value(recordKey{}).(*record)
	return rec
}

// exchangeOf is the upstream side's part of the record of ctx's request,
// nil when it has none (the upstream transport's Exchange).
func exchangeOf(ctx context.Context) *upstream.Exchange {
	if rec := recordOf(ctx); rec != nil {
		return &rec.up
	}
	return nil
}

// decide records the decision of the request and the pacing permit it holds.
func (r *record) decide(d *policy.Decision, permit pacing.Permit) {
	r.d, r.decided = *d, true
	r.permit, r.waited, r.paced = permit, d.Waited, d.Interval > 0
}

// answered records a refusal answered on a hijacked connection or at a
// non-HTTP edge (SOCKS5, transparent), whose status the writer does not
// see.
func (r *record) answered(ref *refusal.Refusal) {
	r.refusal, r.status = ref, ref.Status()
}

// wroteHeaders notes that the request's head has been written to the
// origin: the next paced request of its key may go (Permit.Sent), and its
// response time starts.
func (r *record) wroteHeaders() {
	r.up.SentAt.CompareAndSwap(0, time.Now().UnixNano())
	r.permit.Sent()
}

// refine records what an intercepted opening's tunnel became
// (unknown-protocol, client-tls-failed). For a transparent connection,
// whose opening is not judged (each request in it is), it is the
// opening's decision, and nothing was answered.
func (r *record) refine(decision, note string) {
	if r == nil {
		return
	}
	r.became, r.tunnelNote, r.unanswered = decision, note, !r.decided
}

// note replaces the note of an intercepted opening's record.
func (r *record) note(note string) {
	if r != nil && r.decided {
		r.tunnelNote = note
	}
}

// addNote adds to what the record's note says.
func (r *record) addNote(note string) {
	if r.notes != "" {
		note = r.notes + "; " + note
	}
	r.notes = note
}

// auditRecord makes the audit record of req, or of the opening when req
// is nil: what the decision tells (or, before a decision, what named the
// request), then what happened to it.
func (r *record) auditRecord(req *http.Request) *audit.Record {
	client, method := r.client, http.MethodConnect
	if req != nil {
		client, method = req.RemoteAddr, req.Method
	}
	if !r.decided {
		r.rec = audit.Record{Time: r.start.UTC(), Client: client, Method: method, URL: r.authority,
			Decision: cmp.Or(r.became, r.refusalDecision(), audit.BadRequest), Enforced: true, Note: r.tunnelNote}
		if req != nil {
			r.rec.URL, r.rec.UserAgent = requestURL(req), req.UserAgent()
		}
		return &r.rec
	}
	r.rec = newAuditRecord(r.start, client, method, &r.d)
	rec := &r.rec
	if r.became != "" {
		rec.Decision = r.became
	}
	if r.tunnelNote != "" {
		rec.Note = r.tunnelNote
	}
	rec.Usage = append(rec.Usage, r.signals...)
	rec.Pause = r.up.Pause
	if r.notes != "" {
		rec.AddNote(r.notes)
	}
	return rec
}

// refusalDecision is the decision of the refusal answered, "" when none
// was.
func (r *record) refusalDecision() string {
	if r.refusal == nil {
		return ""
	}
	return r.refusal.Decision()
}

// serveRecorded is the handler of a way in: the request, and its record.
type serveRecorded func(w http.ResponseWriter, r *http.Request, rec *record)

// observe is the handler of the proxy port and of every tunnel's server:
// it creates each request's record and hands it to serve.
func (s *Server) observe(serve serveRecorded) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &record{start: time.Now(), via: audit.ViaProxy}
		rec.w = recordingWriter{ResponseWriter: w, status: http.StatusOK, guard: wire.GuardOf(r.Context())}
		rw := &rec.w // one allocation for both
		defer func() {
			// A relay that aborts the response (http.ErrAbortHandler: the
			// origin's body ended early, the client left) or a bug: the
			// request is audited all the same, then net/http's server
			// closes the connection or resets the stream.
			if p := recover(); p != nil {
				s.aborted(rec, p)
				s.finish(rec, r)
				panic(p)
			}
		}()
		serve(rw, r, rec)
		s.finish(rec, r)
	})
}

// aborted records why a response was cut off.
func (s *Server) aborted(rec *record, p any) {
	rec.w.aborted = true
	switch {
	case rec.up.BodyErr != nil:
		s.metrics.UpstreamErrors.WithLabelValues("http_response_incomplete").Inc()
		s.log.Info("upstream body ended early: the client's response is aborted", "err", rec.up.BodyErr)
		rec.addNote("the origin's body ended early (" + rec.up.BodyErr.Error() + "): the response was aborted")
	case p != http.ErrAbortHandler:
		s.log.Error("panic serving a request", "panic", p)
	}
}

// finish writes the record of a request (req), or of an opening (req nil),
// that is done.
func (s *Server) finish(r *record, req *http.Request) {
	r.permit.Release()
	rec := r.auditRecord(req)
	method := rec.Method // before Cap: the metric's label
	rec.Via = r.via
	rec.UpstreamStatus = r.up.Status
	rec.WaitMS = float64(r.waited.Microseconds()) / 1000
	// When the proxy let the request go: the pacing gate holds the next
	// request of a key until this one's head is written, so the gaps
	// between these times are never shorter than the interval either, and
	// a request let go before an answer paused its origin is not one sent
	// during the pause.
	if r.released != 0 {
		rec.SentMS = float64(r.released.Microseconds()) / 1000
	}
	if p := r.up.Paid; p != nil {
		rec.CrawlerPrice, rec.CrawlerCharged, rec.CrawlerOvercharged, rec.CrawlerError = p.Price, p.Charged, p.Overcharged, p.CrawlerError
	}
	rec.Status, rec.Bytes = cmp.Or(r.status, r.w.status), r.w.bytes+r.w.hijacked.Load()
	if r.unanswered {
		rec.Status = 0
	}
	rec.DurationMS = float64(time.Since(r.start).Microseconds()) / 1000
	rec.Cap() // the status page keeps the latest records too, audit log or not
	s.evidence.Write(rec)
	if admin.Monitored(rec) {
		s.metrics.CountRequest(metrics.MonitoredDecision, method)
		s.metrics.MonitoredRequests.WithLabelValues(rec.Decision).Inc()
	} else {
		s.metrics.CountRequest(rec.Decision, method)
	}
	if kind := r.d.RefusedBy(); r.decided && kind != "" {
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
	guard    *wire.FramingGuard // the connection's, nil for HTTP/2
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
		w.guard.StopWatching()
	}
	c := wire.Hijacked(conn, brw, &w.hijacked)
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestURL is how the audit names a request refused before a decision:
// a CONNECT by its authority (host:port, RFC 9110 §9.3.6), not "//host:port".
func requestURL(r *http.Request) string {
	if r.Method == http.MethodConnect {
		return r.Host
	}
	return r.URL.String()
}
