package proxy

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
)

// Every request, on the proxy port or inside a tunnel, passes through
// observe: it ends with one audit line, one metrics count and one entry in
// the status page's statistics, whatever answered it.

type auditSlotKey struct{}

// auditSlot collects what is known of a request while it is handled.
type auditSlot struct {
	rec      AuditRecord // set by the decision (held here: one allocation less per request)
	decided  bool        // rec is set; false for requests refused before a decision
	upstream int         // the origin's status code, 0 if not forwarded
	status   int         // the status written on a hijacked connection, if any
	decision string      // and its X-Robotsgate-Decision
	permit   pacing.Permit
	waited   time.Duration // held for the pacing slot
}

func auditSlotOf(ctx context.Context) *auditSlot {
	s, _ := ctx.Value(auditSlotKey{}).(*auditSlot)
	return s
}

// recordDecision stores the decision's record for the end of the request.
func recordDecision(req *http.Request, start time.Time, d *policy.Decision) {
	if slot := auditSlotOf(req.Context()); slot != nil {
		slot.rec, slot.decided = newAuditRecord(start, req.RemoteAddr, req.Method, d), true
	}
}

// observe wraps the handler of the proxy port and of every tunnel's server.
func (s *Server) observe(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		slot := auditSlotOf(r.Context()) // the tunnel loop provides one (one request copy less)
		if slot == nil {
			slot = &auditSlot{}
			r = r.WithContext(context.WithValue(r.Context(), auditSlotKey{}, slot))
		}
		rw := &recordingWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rw, r)
		s.finish(r, rw, slot, start)
	})
}

// onResponse notes the status of responses that came from an origin.
func (s *Server) onResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	if resp == nil || resp.Header.Get("X-Robotsgate-Decision") != "" {
		return resp
	}
	if slot := auditSlotOf(ctx.Req.Context()); slot != nil {
		slot.upstream = resp.StatusCode
		if slot.waited > 0 {
			resp.Header.Set("X-Robotsgate-Wait", strconv.FormatFloat(slot.waited.Seconds(), 'f', 3, 64))
		}
	}
	return resp
}

func (s *Server) finish(r *http.Request, rw *recordingWriter, slot *auditSlot, start time.Time) {
	slot.permit.Release()
	rec := &slot.rec
	if !slot.decided {
		decision := cmp.Or(slot.decision, rw.Header().Get("X-Robotsgate-Decision"), "bad-request")
		rec = &AuditRecord{Time: start.UTC(), Client: r.RemoteAddr, Method: r.Method, URL: r.URL.String(),
			UserAgent: r.UserAgent(), Decision: decision, Enforced: true}
	}
	rec.UpstreamStatus = slot.upstream
	rec.WaitMS = float64(slot.waited.Microseconds()) / 1000
	rec.Status, rec.Bytes = cmp.Or(slot.status, rw.status), rw.bytes
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.audit.write(rec)
	s.metrics.CountRequest(rec.Decision, r.Method)
	s.stats.add(rec)
}

// recordingWriter remembers the status and counts the body bytes. It
// implements http.Hijacker and http.Flusher itself, because goproxy asserts
// them directly (CONNECT, WebSocket upgrades, streamed responses).
type recordingWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recordingWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom lets io.Copy of a response body reach net/http's own pooled
// buffer instead of allocating 32 KiB per response.
func (w *recordingWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(w.ResponseWriter, r)
	w.bytes += n
	return n, err
}

func (w *recordingWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *recordingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
