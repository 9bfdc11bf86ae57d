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
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			var refused *usageRefusedError
			if errors.As(err, &refused) { // nothing of the origin's response was written
				s.refuse(w, req, s.decisionRefusal(&refused.d))
				return
			}
			if slot := auditSlotOf(req.Context()); slot != nil && slot.reqBody != nil && slot.reqBody.stalled() {
				w.Header().Set("Connection", "close") // the rest of the body may never come
				s.refuse(w, req, newRefusal(audit.ClientTimeout, "http_request_error",
					"The request body stalled for longer than timeouts.client_body."))
				// Nor wait for it: net/http reads what is left of a body
				// before it closes, which would hold the connection for
				// timeouts.client_body once more.
				http.NewResponseController(w).SetReadDeadline(time.Now())
				return
			}
			s.observeFailure(req, err)
			s.refuse(w, req, s.upstream.failure(req, err))
		},
		BufferPool: relayBuffers{},
		ErrorLog:   log.New(slogWriter{s.log}, "", 0),
	}
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

// errUnrequestedUpgrade is an origin's 101 to a request that did not ask
// for that protocol: relaying it would turn the client's connection into a
// pipe that carries later requests to the origin unjudged.
var errUnrequestedUpgrade = errors.New("the origin switched to a protocol the request did not ask for")

// modifyResponse notes the origin's answer in the audit slot and gives it
// to the politeness governor before the relay passes it on, and withholds
// it when one of its AI-usage signals refuses the client's purpose.
func (s *Server) modifyResponse(resp *http.Response) error {
	if resp.StatusCode == http.StatusSwitchingProtocols &&
		!strings.EqualFold(upgradeType(resp.Request.Header), upgradeType(resp.Header)) {
		return errUnrequestedUpgrade
	}
	if resp.StatusCode == http.StatusProxyAuthRequired && s.settings().parent.carries(resp.Request.URL.Hostname()) {
		// The parent refused robotsgate's credentials: relayed, the 407
		// would ask the client for credentials it does not have.
		return &parentError{status: resp.StatusCode}
	}
	slot := auditSlotOf(resp.Request.Context())
	if slot == nil {
		return nil
	}
	slot.upstream = resp.StatusCode
	if resp.StatusCode == http.StatusSwitchingProtocols {
		slot.status = resp.StatusCode // written on the hijacked connection, unseen by the writer
	}
	s.observeAnswer(resp, slot)
	if slot.waited > 0 {
		resp.Header.Set("X-Robotsgate-Wait", strconv.FormatFloat(slot.waited.Seconds(), 'f', 3, 64))
	}
	if slot.decided && slot.d.Pause != nil && slot.d.Paused > 0 {
		resp.Header.Set("X-Robotsgate-Backoff", backoffHeader(&slot.d))
	}
	if slot.decided && slot.d.Verdict != policy.Allow && slot.d.Request.Client.MonitorHeader {
		resp.Header.Set(wouldRefuseHeader, s.wouldRefuse(&slot.d))
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.Body != nil {
		slot.body = upstreamBody{ReadCloser: resp.Body, slot: slot}
		resp.Body = &slot.body
	}
	if slot.decided && resp.StatusCode != http.StatusSwitchingProtocols && slot.d.ResponseJudge().Refuses() {
		return s.judgeResponse(resp, slot) // its AI-usage signals (usage.go)
	}
	return nil
}

// upstreamBody notes an origin's body that ends early (the relay then
// aborts the client's response).
type upstreamBody struct {
	io.ReadCloser
	slot *auditSlot
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.slot.upstreamErr = err
	}
	return n, err
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
