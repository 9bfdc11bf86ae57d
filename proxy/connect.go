package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/wire"
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
	op := s.openTunnel(req, tunnelOpening{origin: o, proxyAuth: req.Header.Get("Proxy-Authorization")})
	if op.refusal != nil {
		return s.rejectConnect(ctx, op.refusal)
	}
	if op.intercept {
		return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: s.interceptor(o, op.client)}, host
	}
	return &goproxy.ConnectAction{Action: goproxy.ConnectAccept}, host
}

// tunnelOpening is what is known of a tunnel when it is opened: by a
// CONNECT on the proxy port, a SOCKS5 CONNECT, or a transparent
// connection (which opens a tunnel to where the client connected).
type tunnelOpening struct {
	origin    origin.Origin // https://host:port
	proxyAuth string        // the client's credentials, as Proxy-Authorization
	client    *policy.Client
	// dest is the address a transparent client connected to: the name
	// must resolve to it. Invalid for the other ways in.
	dest netip.AddrPort
}

// openedTunnel is the outcome of opening a tunnel: a refusal to send, or
// the client and whether the tunnel is intercepted.
type openedTunnel struct {
	refusal   *http.Response
	intercept bool
	client    policy.Client
}

// openTunnel judges the opening of a tunnel through the one admission
// path: req is the CONNECT (or the CONNECT a SOCKS5 or transparent
// connection stands for).
func (s *Server) openTunnel(req *http.Request, t tunnelOpening) openedTunnel {
	st := s.settings()
	mitm := st.mitmHost(t.origin.Host)
	adm := s.admit(req.Context(), st, admission{origin: t.origin, target: "/", method: req.Method, userAgent: req.UserAgent(),
		clientAddr: req.RemoteAddr, remote: remoteIP(req), proxyAuth: t.proxyAuth, client: t.client, dest: t.dest,
		connect: true, intercept: mitm})
	if resp := s.refusalOf(req, st, &adm); resp != nil {
		return openedTunnel{refusal: resp}
	}
	return openedTunnel{intercept: mitm, client: adm.d.Request.Client}
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

// interceptor returns the hijack function of an intercepted CONNECT: it
// answers the CONNECT and serves the tunnel (serveTunnel).
func (s *Server) interceptor(o origin.Origin, client policy.Client) func(*http.Request, net.Conn, *goproxy.ProxyCtx) {
	return func(connect *http.Request, conn net.Conn, _ *goproxy.ProxyCtx) {
		if _, err := conn.Write(established); err != nil {
			conn.Close()
			return
		}
		s.serveTunnel(conn, &tunnelInfo{origin: o, connect: connect, client: client, via: audit.ViaTunnel})
	}
}

// serveTunnel tells from the client's first bytes what it speaks inside
// an intercepted tunnel and hands the connection to the tunnel server (TLS
// terminated with a certificate minted for the host, or plain HTTP), which
// serves the requests in it; anything else is closed. It returns once the
// tunnel is handed over or closed, so the opening's audit record says what
// the tunnel became.
func (s *Server) serveTunnel(conn net.Conn, info *tunnelInfo) {
	slot := auditSlotOf(info.connect.Context())
	proto, first, err := wire.Sniff(conn, s.timeouts.ClientHeader.Duration())
	conn = wire.WithPrefix(conn, first)
	switch proto {
	case wire.ProtoTLS:
		s.serveTLSTunnel(conn, info, slot)
	case wire.ProtoHTTP:
		info.origin.Scheme = "http"
		slot.note(audit.NotePlainHTTPTunnel + info.origin.String())
		s.pushTunnel(wire.NewFramingGuard(conn, maxHeaderBytes), info)
	default:
		s.log.Info("tunnel closed: the client speaks neither TLS nor HTTP", "host", info.origin.HostPort(),
			"client", info.connect.RemoteAddr, "via", info.via, "first_bytes", fmt.Sprintf("%q", first), "err", err)
		slot.refine(audit.UnknownProtocol, fmt.Sprintf("the client's first bytes are neither TLS nor HTTP: %q", first))
		conn.Close()
	}
}

// serveTLSTunnel terminates the client's TLS and hands the connection to
// the tunnel server.
func (s *Server) serveTLSTunnel(conn net.Conn, info *tunnelInfo, slot *auditSlot) {
	cfg := s.minter.TLSConfigFor(info.origin.Host)
	cfg.NextProtos = tunnelALPN
	rec := wire.RecordHandshake(conn)
	tlsConn := tls.Server(rec, cfg)
	conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tlsConn.HandshakeContext(context.Background()); err != nil {
		s.clientTLSFailed(rec.Failure(err), info.connect.RemoteAddr, info.origin.Host, slot)
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	rec.Done()
	s.pushTLS(tlsConn, info)
}

// pushTLS hands an intercepted TLS connection to the tunnel server: as it
// is for HTTP/2, behind a framing guard for HTTP/1.1.
func (s *Server) pushTLS(tlsConn *tls.Conn, info *tunnelInfo) {
	if tlsConn.ConnectionState().NegotiatedProtocol == "h2" {
		// net/http's server must see the *tls.Conn itself to serve HTTP/2;
		// HTTP/2 frames its messages itself, there is no framing to guard.
		s.pushTunnel(tlsConn, info)
		return
	}
	s.pushTunnel(wire.NewFramingGuard(tlsConn, maxHeaderBytes), info)
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
	if !info.byHost && !info.sameOrigin(r.Host) {
		s.respond(w, plainResponse(r, http.StatusMisdirectedRequest, audit.Misdirected, "http_request_error",
			"This tunnel was opened to "+info.origin.String()+"; the request's Host names another origin."))
		return
	}
	r.URL.Scheme = info.origin.Scheme
	r.URL.Host = r.Host
	r.RemoteAddr = info.connect.RemoteAddr
	s.forward(w, r, info)
}
