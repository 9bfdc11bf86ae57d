package proxy

import (
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/upstream"
	"golang.org/x/net/http/httpguts"
)

// The relay forwards allowed requests with httputil.ReverseProxy, which
// applies the intermediary's rules of RFC 9110 and RFC 9112 as net/http's
// server does: hop-by-hop fields (those named in Connection, Keep-Alive,
// Proxy-Connection, TE but "trailers", Transfer-Encoding, Upgrade) are
// removed in both directions (RFC 9110 §7.6.1); 1xx responses are passed
// on (§15.2); a 101 only answers a request that asked for that upgrade;
// trailers are forwarded; a body that ends early aborts the client's
// connection or stream instead of ending it cleanly; no User-Agent is
// added to a request without one. What it needs from us: the request's
// target kept byte for byte, the client's forwarding headers kept, failures
// rendered as our responses.

func (s *Server) newRelay() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        rewrite,
		Transport:      s.upstream,
		ModifyResponse: s.modifyResponse,
		ErrorHandler:   s.relayFailed,
		BufferPool:     relayBuffers{},
		ErrorLog:       log.New(slogWriter{s.log}, "", 0),
	}
}

// relayFailed is the relay's ErrorHandler: the origin's response withheld
// (its AI-usage signals), the client's body stalled, or the exchange with
// the origin failed. The request's record comes from its context, the
// handler's only channel (forward).
func (s *Server) relayFailed(w http.ResponseWriter, req *http.Request, err error) {
	rec := recordOf(req.Context())
	var refused *usageRefusedError
	if errors.As(err, &refused) { // nothing of the origin's response was written
		s.refuse(w, req, rec, s.decisionRefusal(&refused.d))
		return
	}
	if rec.reqBody != nil && rec.reqBody.stalled() {
		w.Header().Set("Connection", "close") // the rest of the body may never come
		s.refuse(w, req, rec, refusal.New(audit.ClientTimeout, "http_request_error",
			"The request body stalled for longer than timeouts.client_body."))
		// Nor wait for it: net/http reads what is left of a body
		// before it closes, which would hold the connection for
		// timeouts.client_body once more.
		http.NewResponseController(w).SetReadDeadline(time.Now())
		return
	}
	s.observeFailure(req.Context(), rec, err)
	s.refuse(w, req, rec, s.upstreamFailure(req.Context(), req.URL.Host, err))
}

// rewrite keeps what ReverseProxy's Rewrite mode would change of a request
// that is to go out as the client sent it: the query (dropped in part
// when it does not parse as a form, e.g. with ';') and the forwarding
// headers (removed, for the Rewrite function to set; we add none).
func rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = v
		}
	}
}

// modifyResponse notes the origin's answer in the request's record (from
// its context: ModifyResponse has no other channel) and gives it to the
// politeness governor before the relay passes it on, and withholds it
// when one of its AI-usage signals refuses the client's purpose.
func (s *Server) modifyResponse(resp *http.Response) error {
	if resp.StatusCode == http.StatusSwitchingProtocols &&
		!strings.EqualFold(upgradeType(resp.Request.Header), upgradeType(resp.Header)) {
		return upstream.ErrUnrequestedUpgrade
	}
	if resp.StatusCode == http.StatusProxyAuthRequired && s.settings().parent.Carries(resp.Request.URL.Hostname()) {
		// The parent refused robotsgate's credentials: relayed, the 407
		// would ask the client for credentials it does not have.
		return &upstream.ParentError{Status: resp.StatusCode}
	}
	rec := recordOf(resp.Request.Context())
	if rec == nil {
		return nil
	}
	rec.up.Status = resp.StatusCode
	if resp.StatusCode == http.StatusSwitchingProtocols {
		rec.status = resp.StatusCode // written on the hijacked connection, unseen by the writer
	}
	s.observeAnswer(resp, rec)
	if rec.waited > 0 {
		resp.Header.Set("X-Robotsgate-Wait", strconv.FormatFloat(rec.waited.Seconds(), 'f', 3, 64))
	}
	if rec.d.Pause != nil && rec.d.Paused > 0 {
		resp.Header.Set("X-Robotsgate-Backoff", backoffHeader(&rec.d))
	}
	if rec.d.Verdict != policy.Allow && rec.d.Request.Client.MonitorHeader {
		resp.Header.Set(wouldRefuseHeader, s.wouldRefuse(&rec.d))
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.Body != nil {
		resp.Body = rec.up.Body(resp.Body)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && rec.d.ResponseJudge().Refuses() {
		return s.judgeResponse(resp, rec) // its AI-usage signals (usage.go)
	}
	return nil
}

// upgradeType is the protocol a message's Upgrade asks for, "" when its
// Connection does not name upgrade (as ReverseProxy reads it).
func upgradeType(h http.Header) string {
	if !httpguts.HeaderValuesContainsToken(h["Connection"], "Upgrade") {
		return ""
	}
	return h.Get("Upgrade")
}

// keepOnlyWebSocketUpgrade removes a request's Upgrade unless it asks for
// a WebSocket and nothing else: another protocol (h2c, …) would carry
// requests the proxy never judges.
func keepOnlyWebSocketUpgrade(h http.Header) {
	if _, ok := h["Upgrade"]; !ok {
		return
	}
	if len(h["Upgrade"]) == 1 && strings.EqualFold(strings.TrimSpace(upgradeType(h)), "websocket") {
		return
	}
	h.Del("Upgrade")
}

// relayBuffers lends the relay its copy buffers.
type relayBuffers struct{}

var relayBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (relayBuffers) Get() []byte  { return *relayBufPool.Get().(*[]byte) }
func (relayBuffers) Put(b []byte) { relayBufPool.Put(&b) }

// idleBody is a request body read with an idle timeout: each read must
// bring data within timeout (timeouts.client_body), or the request fails
// (408). The deadline is the connection's (HTTP/1.x) or the stream's
// (HTTP/2), set through the ResponseController, and cleared at the end of
// the body so that it does not cut off the response that follows.
type idleBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	timeout  time.Duration
	done     bool        // the body ended (read by one goroutine at a time)
	timedOut atomic.Bool // it ended by the timeout
	// started: reading has begun, so net/http's server has answered an
	// Expect: 100-continue itself (recordingWriter.WriteHeader).
	started atomic.Bool
}

func newIdleBody(body io.ReadCloser, w http.ResponseWriter, timeout time.Duration) *idleBody {
	return &idleBody{ReadCloser: body, rc: http.NewResponseController(w), timeout: timeout}
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	b.started.Store(true)
	b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
		var te interface{ Timeout() bool }
		b.timedOut.Store(errors.As(err, &te) && te.Timeout())
	}
	return n, err
}

// stalled reports whether the body ended because the client stopped
// sending it.
func (b *idleBody) stalled() bool { return b.timedOut.Load() }
