package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/wire"
)

// newGoproxy wires goproxy, which answers CONNECTs: our dialer for blind
// tunnels (never HTTP(S)_PROXY from the environment, never its public CA),
// our judgement on every CONNECT.
func (s *Server) newGoproxy() *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = slogWriter{s.log}
	gp.Tr = s.upstream.Transport()
	gp.ConnectDial = nil // NewProxyHttpServer sets one from HTTPS_PROXY
	gp.ConnectDialWithReq = func(req *http.Request, _, addr string) (net.Conn, error) {
		c, err := s.upstream.DialBlind(req.Context(), addr, netip.AddrPort{})
		if err != nil {
			return nil, &tunnelDialError{err} // answered by tunnelDialFailed
		}
		return c, nil
	}
	gp.ConnectionErrHandler = s.tunnelDialFailed
	gp.OnRequest().HandleConnectFunc(s.onConnect)
	return gp
}

// onConnect decides what a CONNECT becomes: an intercepted tunnel (every
// request inside judged), a blind tunnel (only the host judged), or a
// refusal written before any 200. goproxy calls it with nothing but the
// request: its record comes from the request's context (serveProxyPort).
func (s *Server) onConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	req := ctx.Req
	rec := recordOf(req.Context())
	o, err := origin.New("https", host)
	if err != nil {
		return s.rejectConnect(ctx, rec, refusal.BadRequest("The CONNECT target is not a valid host:port."))
	}
	op := s.openTunnel(req.Context(), tunnelOpening{origin: o, clientAddr: req.RemoteAddr, remote: remoteIP(req),
		userAgent: req.UserAgent(), proxyAuth: req.Header.Get("Proxy-Authorization")}, rec)
	if op.refusal != nil {
		return s.rejectConnect(ctx, rec, op.refusal)
	}
	if op.intercept {
		return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: s.interceptor(o, op.client, rec)}, host
	}
	return &goproxy.ConnectAction{Action: goproxy.ConnectAccept}, host
}

// tunnelOpening is what is known of a tunnel when it is opened: by a
// CONNECT on the proxy port, a SOCKS5 CONNECT, or a transparent
// connection (which opens a tunnel to where the client connected).
type tunnelOpening struct {
	origin     origin.Origin // https://host:port
	clientAddr string        // the client's address (ip:port)
	remote     netip.Addr    // and its IP, which identifies it
	userAgent  string        // a CONNECT's User-Agent, if it has one
	proxyAuth  string        // the client's credentials, as Proxy-Authorization
	client     *policy.Client
	// dest is the address a transparent client connected to: the name
	// must resolve to it. Invalid for the other ways in.
	dest netip.AddrPort
}

// openedTunnel is the outcome of opening a tunnel: a refusal to send, or
// the client and whether the tunnel is intercepted.
type openedTunnel struct {
	refusal   *refusal.Refusal
	intercept bool
	client    policy.Client
}

// openTunnel judges the opening of a tunnel through the one admission
// path, for the opening's record rec.
func (s *Server) openTunnel(ctx context.Context, t tunnelOpening, rec *record) openedTunnel {
	st := s.settings()
	mitm := st.mitmHost(t.origin.Host)
	rt := routeBlind
	if mitm {
		rt = routeIntercept
	}
	adm := s.admit(ctx, st, admission{route: rt, origin: t.origin, target: "/", method: http.MethodConnect, userAgent: t.userAgent,
		clientAddr: t.clientAddr, remote: t.remote, proxyAuth: t.proxyAuth, client: t.client, dest: t.dest}, rec)
	if r := adm.refusal(s); r != nil {
		return openedTunnel{refusal: r}
	}
	return openedTunnel{intercept: mitm, client: adm.d.Request.Client}
}

// rejectConnect makes goproxy write the refusal r on the client
// connection and close it, instead of tunnelling.
func (s *Server) rejectConnect(ctx *goproxy.ProxyCtx, rec *record, r *refusal.Refusal) (*goproxy.ConnectAction, string) {
	resp := r.Response(ctx.Req)
	resp.Close = true
	ctx.Resp = resp
	rec.answered(r) // written on the hijacked connection, unseen by the writer
	return &goproxy.ConnectAction{Action: goproxy.ConnectReject}, ""
}

// established answers an accepted CONNECT (RFC 9110 §9.3.6).
var established = []byte("HTTP/1.1 200 Connection established\r\n\r\n")

// tunnelALPN is what intercepted TLS offers the client: HTTP/2 first, as
// origins do.
var tunnelALPN = []string{"h2", "http/1.1"}

// interceptor returns the hijack function of an intercepted CONNECT: it
// answers the CONNECT and serves the tunnel (serveTunnel), for the
// CONNECT's record rec.
func (s *Server) interceptor(o origin.Origin, client policy.Client, rec *record) func(*http.Request, net.Conn, *goproxy.ProxyCtx) {
	return func(connect *http.Request, conn net.Conn, _ *goproxy.ProxyCtx) {
		if _, err := conn.Write(established); err != nil {
			conn.Close()
			return
		}
		s.serveTunnel(conn, &tunnelInfo{origin: o, clientAddr: connect.RemoteAddr, client: client, via: audit.ViaTunnel}, rec)
	}
}

// serveTunnel tells from the client's first bytes what it speaks inside
// an intercepted tunnel and hands the connection to the tunnel server (TLS
// terminated with a certificate minted for the host, or plain HTTP), which
// serves the requests in it; anything else is closed. It returns once the
// tunnel is handed over or closed, so the opening's audit record says what
// the tunnel became: opening is its record.
func (s *Server) serveTunnel(conn net.Conn, info *tunnelInfo, opening *record) {
	proto, first, err := wire.Sniff(conn, s.timeouts.ClientHeader.Duration())
	conn = wire.WithPrefix(conn, first)
	switch proto {
	case wire.ProtoTLS:
		s.serveTLSTunnel(conn, info, opening)
	case wire.ProtoHTTP:
		info.origin.Scheme = "http"
		opening.note(audit.NotePlainHTTPTunnel + info.origin.String())
		s.pushTunnel(wire.NewFramingGuard(conn, maxHeaderBytes), info)
	default:
		s.log.Info("tunnel closed: the client speaks neither TLS nor HTTP", "host", info.origin.HostPort(),
			"client", info.clientAddr, "via", info.via, "first_bytes", fmt.Sprintf("%q", first), "err", err)
		opening.refine(audit.UnknownProtocol, fmt.Sprintf("the client's first bytes are neither TLS nor HTTP: %q", first))
		conn.Close()
	}
}

// serveTLSTunnel terminates the client's TLS and hands the connection to
// the tunnel server.
func (s *Server) serveTLSTunnel(conn net.Conn, info *tunnelInfo, opening *record) {
	cfg := s.minter.TLSConfigFor(info.origin.Host)
	cfg.NextProtos = tunnelALPN
	rec := wire.RecordHandshake(conn)
	tlsConn := tls.Server(rec, cfg)
	conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tlsConn.HandshakeContext(context.Background()); err != nil {
		s.clientTLSFailed(rec.Failure(err), info.clientAddr, info.origin.Host, opening)
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
func (s *Server) serveTunnelRequest(w http.ResponseWriter, r *http.Request, rec *record) {
	info, ok := tunnelOf(r.Context())
	if !ok {
		http.Error(w, "no tunnel", http.StatusInternalServerError)
		return
	}
	rec.via = info.via
	if r.Method == http.MethodConnect {
		s.refuse(w, r, rec, refusal.BadRequest("CONNECT inside a tunnel is not supported.").WithStatus(http.StatusMethodNotAllowed))
		return
	}
	if r.Host == "" {
		r.Host = info.origin.HostPort()
	}
	if !info.byHost && !info.sameOrigin(r.Host) {
		s.refuse(w, r, rec, refusal.New(audit.Misdirected, "http_request_error",
			"This tunnel was opened to "+info.origin.String()+"; the request's Host names another origin."))
		return
	}
	r.URL.Scheme = info.origin.Scheme
	r.URL.Host = r.Host
	r.RemoteAddr = info.clientAddr
	s.forward(w, r, info, rec)
}

// tunnelDialError is a blind tunnel that could not be opened.
type tunnelDialError struct{ err error }

func (e *tunnelDialError) Error() string { return e.err.Error() }
func (e *tunnelDialError) Unwrap() error { return e.err }

// tunnelDialFailed is goproxy's ConnectionErrHandler. For a blind tunnel
// that could not be opened it writes the same fixed 502/504 (or egress
// refusal) as a failed request, instead of goproxy's 502 with the error's
// text. goproxy also calls it when a tunnel's copy fails midway: then the
// tunnel carries the client's bytes and nothing is written.
func (s *Server) tunnelDialFailed(w io.Writer, ctx *goproxy.ProxyCtx, err error) {
	var de *tunnelDialError
	if !errors.As(err, &de) || ctx == nil || ctx.Req == nil {
		return
	}
	r := s.upstreamFailure(ctx.Req.Context(), ctx.Req.URL.Host, de.err)
	recordOf(ctx.Req.Context()).answered(r) // written on the hijacked connection, unseen by the writer
	resp := r.Response(ctx.Req)
	resp.Close = true
	resp.Write(w)
}
