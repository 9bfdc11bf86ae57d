package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/audit"
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
		return s.rejectConnect(ctx, plainResponse(req, http.StatusBadRequest, audit.BadRequest, "http_request_error", "The CONNECT target is not a valid host:port."))
	}
	st := s.settings()
	mitm := st.mitmHost(o.Host)
	adm := s.admit(req.Context(), st, admission{origin: o, target: "/", method: req.Method, userAgent: req.UserAgent(),
		clientAddr: req.RemoteAddr, remote: remoteIP(req), proxyAuth: req.Header.Get("Proxy-Authorization"),
		connect: true, intercept: mitm})
	if resp := s.refusalOf(req, st, &adm); resp != nil {
		return s.rejectConnect(ctx, resp)
	}
	if mitm {
		return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: s.interceptor(o, adm.d.Request.Client)}, host
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

// established answers an accepted CONNECT (RFC 9110 §9.3.6).
var established = []byte("HTTP/1.1 200 Connection established\r\n\r\n")

// tunnelALPN is what intercepted TLS offers the client: HTTP/2 first, as
// origins do.
var tunnelALPN = []string{"h2", "http/1.1"}

// interceptor returns the hijack function of an intercepted tunnel: answer
// the CONNECT, tell from the client's first bytes what it speaks, and hand
// the connection to the tunnel server (TLS terminated with a certificate
// minted for the host, or plain HTTP), which serves the requests in it. It
// returns once the tunnel is handed over or closed, so the CONNECT's audit
// record says what the tunnel became.
func (s *Server) interceptor(o origin.Origin, client policy.Client) func(*http.Request, net.Conn, *goproxy.ProxyCtx) {
	return func(connect *http.Request, conn net.Conn, _ *goproxy.ProxyCtx) {
		slot := auditSlotOf(connect.Context())
		if _, err := conn.Write(established); err != nil {
			conn.Close()
			return
		}
		proto, first, err := sniff(conn, s.timeouts.ClientHeader.Duration())
		conn = &prefixConn{Conn: conn, prefix: first}
		info := &tunnelInfo{origin: o, connect: connect, client: client}
		switch proto {
		case protoTLS:
			s.serveTLSTunnel(conn, info, slot)
		case protoHTTP:
			info.origin.Scheme = "http"
			slot.note("plain HTTP inside the tunnel: each request in it is judged as " + info.origin.String())
			s.pushTunnel(newFramingGuard(conn, maxHeaderBytes), info)
		default:
			s.log.Info("tunnel closed: the client speaks neither TLS nor HTTP", "host", o.HostPort(),
				"client", connect.RemoteAddr, "first_bytes", fmt.Sprintf("%q", first), "err", err)
			slot.refine(audit.UnknownProtocol, fmt.Sprintf("the client's first bytes are neither TLS nor HTTP: %q", first))
			conn.Close()
		}
	}
}

// serveTLSTunnel terminates the client's TLS and hands the connection to
// the tunnel server: as it is for HTTP/2, behind a framing guard for
// HTTP/1.1.
func (s *Server) serveTLSTunnel(conn net.Conn, info *tunnelInfo, slot *auditSlot) {
	cfg := s.minter.TLSConfigFor(info.origin.Host)
	cfg.NextProtos = tunnelALPN
	tlsConn := tls.Server(conn, cfg)
	conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tlsConn.HandshakeContext(context.Background()); err != nil {
		s.clientTLSFailed(err, info.connect.RemoteAddr, info.origin.Host, slot)
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	if tlsConn.ConnectionState().NegotiatedProtocol == "h2" {
		// net/http's server must see the *tls.Conn itself to serve HTTP/2;
		// HTTP/2 frames its messages itself, there is no framing to guard.
		s.pushTunnel(tlsConn, info)
		return
	}
	s.pushTunnel(newFramingGuard(tlsConn, maxHeaderBytes), info)
}

func (s *Server) pushTunnel(c net.Conn, info *tunnelInfo) {
	if !s.tunnelLn.push(c, info) {
		c.Close() // shutting down
	}
}

// serveTunnelRequest checks that a request inside a tunnel is for the host
// the tunnel was opened to (RFC 9110 §7.4: otherwise 421) and forwards it
// like an absolute-form request for the tunnel's origin.
func (s *Server) serveTunnelRequest(w http.ResponseWriter, r *http.Request) {
	info, ok := tunnelOf(r.Context())
	if !ok {
		http.Error(w, "no tunnel", http.StatusInternalServerError)
		return
	}
	if r.Method == http.MethodConnect {
		s.respond(w, plainResponse(r, http.StatusMethodNotAllowed, audit.BadRequest, "http_request_error", "CONNECT inside a tunnel is not supported."))
		return
	}
	if r.Host == "" {
		r.Host = info.origin.HostPort()
	}
	if !info.sameOrigin(r.Host) {
		s.respond(w, plainResponse(r, http.StatusMisdirectedRequest, audit.Misdirected, "http_request_error",
			"This tunnel was opened to "+info.origin.String()+"; the request's Host names another origin."))
		return
	}
	r.URL.Scheme = info.origin.Scheme
	r.URL.Host = r.Host
	r.RemoteAddr = info.connect.RemoteAddr
	s.forward(w, r, info)
}
