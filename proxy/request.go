package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/headscan"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/upstream"
)

// serveProxyPort serves a request on the proxy port: a CONNECT (goproxy,
// which hands the request's record to onConnect only through its
// context), an absolute-form http://, https://, ws:// or wss:// request,
// or else a refusal (the proxy is not a web server).
func (s *Server) serveProxyPort(w http.ResponseWriter, req *http.Request, rec *record) {
	switch {
	case req.Method == http.MethodConnect:
		s.gp.ServeHTTP(w, req.WithContext(withRecord(req.Context(), rec)))
		return
	case !req.URL.IsAbs():
		s.refuse(w, req, rec, refusal.BadRequest("This is robotsgate, a forward proxy: send absolute-form requests (set HTTP_PROXY / HTTPS_PROXY to this address)."))
		return
	}
	// A WebSocket URL names the origin its upgrade request goes to
	// (RFC 6455 §3): ws is http, wss is https.
	switch strings.ToLower(req.URL.Scheme) {
	case "ws":
		req.URL.Scheme = "http"
	case "wss":
		req.URL.Scheme = "https"
	}
	s.forward(w, req, nil, rec)
}

// forward judges one request (absolute-form on the proxy port, or from
// inside a tunnel) and relays it if it is allowed.
func (s *Server) forward(w http.ResponseWriter, req *http.Request, tunnel *tunnelInfo, rec *record) {
	if r := s.judge(req, tunnel, rec); r != nil {
		s.refuse(w, req, rec, r)
		return
	}
	keepOnlyWebSocketUpgrade(req.Header)
	if rec.d.ScanHTML && rec.d.ResponseJudge().Refuses() {
		headscan.RestrictAcceptEncoding(req.Header) // the page's head must be readable (usage.go)
	}
	if tunnel != nil && tunnel.dest.IsValid() {
		rec.up.Pin = &tunnel.dest // a transparent request goes where its client connected
	}
	ctx := req.Context()
	if rec.paced || s.timesAnswers() {
		// The next request of its pacing key waits for this one to be
		// written to the origin, not just released (pacing/gate.go); its
		// response time counts from then (adaptive pacing).
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: rec.wroteHeaders})
	}
	// The relay's copy of the request carries its record (the relay's hooks
	// have no other channel) and its body read with timeouts.client_body;
	// the server's own keeps the body it reads what is left of.
	req = req.WithContext(withRecord(ctx, rec))
	if req.Body != nil && req.Body != http.NoBody {
		b := newIdleBody(req.Body, w, s.timeouts.ClientBody.Duration())
		req.Body, rec.reqBody, rec.w.reqBody = b, b, b
	}
	rec.up.Sign = s.signingFor(req, rec) // Web Bot Auth: signed by the upstream transport
	rec.released = time.Since(rec.start)
	s.relay.ServeHTTP(w, req)
}

// refuse answers an HTTP client's request with the refusal r, which the
// request's audit record says it was answered with. net/http's server
// reads what is left of an unread request body (up to 256 KiB) before it
// writes the response, so that read gets timeouts.client_body too: a
// client that stops sending a refused body cannot hold the connection.
func (s *Server) refuse(w http.ResponseWriter, req *http.Request, rec *record, r *refusal.Refusal) {
	rec.refusal = r
	if req.ContentLength != 0 && req.ProtoMajor == 1 {
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.timeouts.ClientBody.Duration()))
	}
	r.Write(w, req)
}

// judge decides one request and returns the refusal to send, or nil when
// the request may go upstream (it is then held for its pacing slot and
// prepared to go out as the client sent it).
func (s *Server) judge(req *http.Request, tunnel *tunnelInfo, rec *record) *refusal.Refusal {
	st := s.settings()
	o, err := origin.FromURL(req.URL)
	if err != nil {
		return refusal.BadRequest("The request URL has no valid http or https origin.")
	}
	target := requestTarget(req)
	a := admission{route: routeProxyPort, origin: o, target: target, method: req.Method, userAgent: req.UserAgent(), clientAddr: req.RemoteAddr,
		licenseToken: policy.HasLicenseToken(req.Header.Values("Authorization"))}
	if tunnel != nil {
		tunnel.fill(&a, req)
	} else {
		a.remote, a.proxyAuth = remoteIP(req), req.Header.Get("Proxy-Authorization")
	}
	adm := s.admit(req.Context(), st, a, rec)
	if adm.refused == nil && a.route == routeTransparent && !a.destChecked {
		tunnel.checked.Store(&o) // the next request to o on this connection is not checked again
	}
	if r := adm.refusal(s); r != nil {
		return r
	}
	upstream.Identify(req, st.cfg.Identify)
	prepareUpstream(req, target)
	return nil
}

// pace holds an allowed request until its slot; the caller releases the
// permit when the response is done. The error is the client leaving.
func (s *Server) pace(ctx context.Context, st *settings, d *policy.Decision) (pacing.Permit, error) {
	var origin string
	if d.Interval > 0 {
		origin = d.Request.Origin.String()
		s.metrics.PacingHeld.Inc()
		s.stats.Holding(origin, d.Interval, +1, 0)
	}
	permit, err := st.engine.Pace(ctx, d)
	if d.Interval > 0 {
		s.metrics.PacingHeld.Dec()
		s.stats.Holding(origin, d.Interval, -1, d.Waited)
	}
	if err != nil {
		return permit, err
	}
	if d.Interval > 0 && d.Verdict == policy.Allow {
		s.metrics.PacingWaitSeconds.Observe(d.Waited.Seconds())
	}
	return permit, nil
}

func remoteIP(req *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(req.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr()
}

// requestTarget returns the request-target as the client sent it, in origin
// form: the path and query of an absolute-form target, "/" when it has none.
func requestTarget(req *http.Request) string {
	t := req.RequestURI
	if t == "" {
		return req.URL.RequestURI()
	}
	if strings.HasPrefix(t, "/") {
		return t
	}
	if i := strings.Index(t, "://"); i >= 0 {
		rest := t[i+3:]
		j := strings.IndexAny(rest, "/?")
		if j < 0 {
			return "/"
		}
		if rest[j] == '?' {
			return "/" + rest[j:]
		}
		return rest[j:]
	}
	return "/" // "*" or an authority
}

// prepareUpstream makes the request go out as the client sent it: the raw
// request-target, not a re-encoding of the parsed path. (The relay drops
// the client's "Connection: close", which would stop upstream connection
// reuse.)
func prepareUpstream(req *http.Request, target string) {
	if req.URL.RequestURI() == target || strings.HasPrefix(target, "//") {
		return
	}
	path, query, hasQuery := strings.Cut(target, "?")
	req.URL.Opaque = path
	req.URL.RawQuery = query
	req.URL.ForceQuery = hasQuery && query == ""
}

// logDecision writes the one log line of a decision.
func (s *Server) logDecision(ctx context.Context, a *admission, d *policy.Decision) {
	if d.Verdict == policy.Allow && !s.log.Enabled(ctx, slog.LevelDebug) {
		return // the common case costs nothing
	}
	attrs := []any{
		"decision", d.Verdict.String(), "method", a.method,
		"url", d.Request.Origin.URL(d.Request.Target), "group", d.Group(),
		"client", a.clientAddr, "client_rule", d.Request.Client.Name, "mode", d.Request.Client.Mode.String(),
	}
	if d.Rule.Matched {
		attrs = append(attrs, "rule", d.Rule.Rule.String(), "line", d.Rule.Rule.Line)
	}
	if d.Note != "" {
		attrs = append(attrs, "note", d.Note)
	}
	switch {
	case d.Verdict == policy.Allow:
		s.log.Debug("request", attrs...)
	case d.Refused():
		s.log.Info("request refused", attrs...)
	default:
		s.log.Info("request would be refused (monitor mode): forwarded", attrs...)
	}
}

type tunnelKey struct{}

// tunnelInfo describes the intercepted tunnel a request arrived in: a
// CONNECT's, a SOCKS5 CONNECT's, or a transparent connection.
type tunnelInfo struct {
	origin     origin.Origin // https, or http for plain HTTP in the tunnel
	clientAddr string        // the client's address (ip:port)
	client     policy.Client // identified (and authenticated) at the opening
	via        string        // how the tunnel's requests arrived (audit.Via...)
	// dest is where a transparent client connected (the kernel's original
	// destination): each request is judged on its own as on the proxy port
	// (its client by address, its destination checked) and its name must
	// resolve to dest; upstream connections go to dest. Invalid for
	// CONNECT and SOCKS5 tunnels, whose requests are judged as the
	// tunnel's client, the destination checked when it was opened.
	dest netip.AddrPort
	// byHost: each request's Host names its origin (a transparent HTTP
	// connection); otherwise the Host must name the tunnel's origin.
	byHost bool
	// lastHost is the last Host header found to name origin.
	lastHost atomic.Pointer[string]
	// checked is the last origin of a transparent connection whose
	// destination was checked (and found to resolve to dest).
	checked atomic.Pointer[origin.Origin]
}

// fill sets what the tunnel tells of a request's admission.
func (t *tunnelInfo) fill(a *admission, req *http.Request) {
	if !t.dest.IsValid() {
		a.route, a.client = routeTunnel, &t.client
		return
	}
	a.route, a.remote, a.dest = routeTransparent, remoteIP(req), t.dest
	if last := t.checked.Load(); last != nil && *last == a.origin {
		a.destChecked = true
	}
}

// sameOrigin reports whether a Host header inside the tunnel names the
// tunnel's origin. The last matching spelling is remembered: requests on one
// connection repeat it, and normalising a host costs microseconds.
func (t *tunnelInfo) sameOrigin(host string) bool {
	if last := t.lastHost.Load(); last != nil && *last == host {
		return true
	}
	o, err := origin.New(t.origin.Scheme, host)
	if err != nil || o != t.origin {
		return false
	}
	h := host // a copy: taking host's address would move it to the heap on every call
	t.lastHost.Store(&h)
	return true
}

func tunnelOf(ctx context.Context) (*tunnelInfo, bool) {
	t, ok := ctx.Value(tunnelKey{}).(*tunnelInfo)
	return t, ok
}
