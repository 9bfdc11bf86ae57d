package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/policy"
)

// onConnect decides what a CONNECT becomes: an intercepted tunnel (every
// request inside judged), a blind tunnel (only the host judged), or a
// refusal written before any 200.
func (s *Server) onConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	req := ctx.Req
	o, err := origin.New("https", host)
	if err != nil {
		return s.rejectConnect(ctx, plainResponse(req, http.StatusBadRequest, "bad-request", "http_request_error", "The CONNECT target is not a valid host:port."))
	}
	st := s.settings()
	client, err := st.engine.Identify(remoteIP(req), req.Header.Get("Proxy-Authorization"))
	if err != nil {
		return s.rejectConnect(ctx, s.authRequired(req, st))
	}
	mitm := st.mitmHost(o.Host)
	if err := s.checkDestination(req.Context(), o, !mitm); err != nil {
		return s.rejectConnect(ctx, s.egressRefusal(req, err))
	}
	if mitm {
		if slot := auditSlotOf(req.Context()); slot != nil {
			d := policy.Decision{Request: policy.Request{Origin: o, Target: "/", UserAgent: req.UserAgent(), Client: client},
				Note: "tunnel intercepted: each request in it is judged"}
			slot.rec, slot.decided = newAuditRecord(time.Now(), req.RemoteAddr, req.Method, &d), true
		}
		return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: s.interceptor(o, client)}, host
	}
	start := time.Now()
	d, err := st.engine.DecideHost(req.Context(), policy.Request{Origin: o, UserAgent: req.UserAgent(), Client: client})
	if err != nil {
		return s.rejectConnect(ctx, plainResponse(req, http.StatusServiceUnavailable, "unreachable", "http_request_denied", "The request was cancelled while robots.txt was fetched."))
	}
	s.logDecision(req, &d)
	recordDecision(req, start, &d)
	if d.Refused() {
		return s.rejectConnect(ctx, s.refusal(req, &d))
	}
	return &goproxy.ConnectAction{Action: goproxy.ConnectAccept}, host
}

// rejectConnect makes goproxy write resp on the client connection and close
// it, instead of tunnelling.
func (s *Server) rejectConnect(ctx *goproxy.ProxyCtx, resp *http.Response) (*goproxy.ConnectAction, string) {
	resp.Close = true
	ctx.Resp = resp
	if slot := auditSlotOf(ctx.Req.Context()); slot != nil {
		// written on the hijacked connection, unseen by the writer
		slot.status, slot.decision = resp.StatusCode, resp.Header.Get("X-Robotsgate-Decision")
	}
	return &goproxy.ConnectAction{Action: goproxy.ConnectReject}, ""
}

// interceptor returns the hijack function of an intercepted tunnel: answer
// the CONNECT, terminate TLS with a certificate minted for the host, and
// serve the requests in it.
func (s *Server) interceptor(o origin.Origin, client policy.Client) func(*http.Request, net.Conn, *goproxy.ProxyCtx) {
	return func(connect *http.Request, conn net.Conn, _ *goproxy.ProxyCtx) {
		if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
			conn.Close()
			return
		}
		tlsConn := tls.Server(conn, s.minter.TLSConfigFor(o.Host))
		conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
		if err := tlsConn.HandshakeContext(context.Background()); err != nil {
			s.log.Debug("tunnel handshake failed", "host", o.Host, "client", connect.RemoteAddr, "err", err)
			conn.Close()
			return
		}
		conn.SetDeadline(time.Time{})
		info := &tunnelInfo{origin: o, connect: connect, client: client}
		s.tunnelConns.serve(newFramingGuard(tlsConn, maxHeaderBytes+4096), connect.RemoteAddr, info)
	}
}

// serveTunnelRequest checks that a request inside a tunnel is for the host
// the tunnel was opened to (RFC 9110 §7.4: otherwise 421) and hands it to
// goproxy as an absolute-form https request.
func (s *Server) serveTunnelRequest(w http.ResponseWriter, r *http.Request) {
	info, ok := tunnelOf(r.Context())
	if !ok {
		http.Error(w, "no tunnel", http.StatusInternalServerError)
		return
	}
	if r.Host == "" {
		r.Host = info.origin.HostPort()
	}
	if !info.sameOrigin(r.Host) {
		writeResponse(w, plainResponse(r, http.StatusMisdirectedRequest, "misdirected", "http_request_error",
			"This tunnel was opened to "+info.origin.String()+"; the request's Host names another origin."))
		return
	}
	r.URL.Scheme = "https"
	r.URL.Host = r.Host
	r.RemoteAddr = info.connect.RemoteAddr
	s.gp.ServeHTTP(w, r)
}
