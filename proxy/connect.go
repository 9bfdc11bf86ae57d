package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
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
		return s.rejectConnect(ctx, s.plainRefusal(req, http.StatusBadRequest, "bad-request", "http_request_error", "The CONNECT target is not a valid host:port."))
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
			slot.rec = newAuditRecord(time.Now(), req.RemoteAddr, req.Method, &d)
		}
		return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: s.interceptor(o, client)}, host
	}
	start := time.Now()
	d, err := st.engine.DecideHost(req.Context(), policy.Request{Origin: o, UserAgent: req.UserAgent(), Client: client})
	if err != nil {
		return s.rejectConnect(ctx, s.plainRefusal(req, http.StatusServiceUnavailable, "unreachable", "http_request_denied", "The request was cancelled while robots.txt was fetched."))
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
// serve the requests inside with a net/http server of the tunnel's own.
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
		inner := &http.Server{
			Handler:           s.observe(guardFraming(s.tunnelHandler(info))),
			MaxHeaderBytes:    maxHeaderBytes,
			ReadHeaderTimeout: clientHeaderTimeout,
			IdleTimeout:       clientIdleTimeout,
			ErrorLog:          s.http.ErrorLog,
			ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, tunnelKey{}, info)
			},
		}
		if !s.tunnels.add(inner) {
			tlsConn.Close() // shutting down
			return
		}
		defer s.tunnels.remove(inner)
		// The tunnel's server closes the connection: when the client leaves,
		// when it idles, or once in-flight requests end during Shutdown.
		_ = inner.Serve(newOneConnListener(newFramingGuard(tlsConn, maxHeaderBytes+4096)))
	}
}

// tunnelHandler checks that a request inside a tunnel is for the host the
// tunnel was opened to (RFC 9110 §7.4: otherwise 421) and hands it to
// goproxy as an absolute-form https request.
func (s *Server) tunnelHandler(info *tunnelInfo) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "" {
			r.Host = info.origin.HostPort()
		}
		if !info.sameOrigin(r.Host) {
			writeResponse(w, s.plainRefusal(r, http.StatusMisdirectedRequest, "misdirected", "http_request_error",
				"This tunnel was opened to "+info.origin.String()+"; the request's Host names another origin."))
			return
		}
		r.URL.Scheme = "https"
		r.URL.Host = r.Host
		r.RemoteAddr = info.connect.RemoteAddr
		s.gp.ServeHTTP(w, r)
	})
}

// tunnelSet tracks the servers of intercepted tunnels so Shutdown can drain
// them: their connections are hijacked, so the main server no longer sees
// them.
type tunnelSet struct {
	mu      sync.Mutex
	servers map[*http.Server]struct{}
	closed  bool
}

func (t *tunnelSet) add(srv *http.Server) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	if t.servers == nil {
		t.servers = map[*http.Server]struct{}{}
	}
	t.servers[srv] = struct{}{}
	return true
}

func (t *tunnelSet) remove(srv *http.Server) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.servers, srv)
}

// shutdown drains every tunnel server (idle connections closed at once,
// busy ones after their request) and closes what is left when ctx ends.
func (t *tunnelSet) shutdown(ctx context.Context) {
	t.mu.Lock()
	t.closed = true
	servers := make([]*http.Server, 0, len(t.servers))
	for srv := range t.servers {
		servers = append(servers, srv)
	}
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if srv.Shutdown(ctx) != nil {
				srv.Close()
			}
		}()
	}
	wg.Wait()
}
