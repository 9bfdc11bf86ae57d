package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/wire"
)

// A parent proxy (upstream.proxy) carries every upstream connection except
// those to upstream.no_proxy hosts: the relay's and the robots.txt
// resolver's transports send http:// requests to it in absolute form and
// reach https:// origins through CONNECT (their Proxy is ProxyFor), and
// blind tunnels are CONNECTed through it by connectThroughParent.
//
// The egress guard cannot check a destination at dial time any more: the
// connection goes to the parent, which may well be on a private network
// (the operator configured it, so it is allowed). Every request and tunnel
// is therefore checked before it is sent (ProxyFor, connectThroughParent):
// the name against the host lists, and the addresses it resolves to here.
// The parent resolves the name again itself, so what it connects to is not
// pinned to what was checked (README).

// Parent is a configured parent proxy.
type Parent struct {
	url      *url.URL    // as configured, credentials included (the transports send them)
	addr     string      // host:port dialled
	redacted string      // the URL for logs: no password
	auth     string      // Proxy-Authorization of our own CONNECTs, "" without credentials
	tls      *tls.Config // for an https:// parent (blind tunnels; the transports have their own)
	noProxy  []string    // lower-case host globs reached directly
}

// NewParent returns the parent proxy of u, nil when there is none. roots
// verify an https:// parent, as they verify origins.
func NewParent(u config.Upstream, roots *x509.CertPool) (*Parent, error) {
	if u.Proxy == "" {
		return nil, nil
	}
	pu, err := url.Parse(u.Proxy)
	if err != nil || pu.Port() == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
		return nil, errors.New("upstream.proxy: invalid URL") // Validate says more, without the password
	}
	p := &Parent{
		url:      &url.URL{Scheme: pu.Scheme, User: pu.User, Host: pu.Host},
		addr:     net.JoinHostPort(pu.Hostname(), pu.Port()),
		redacted: pu.Redacted(),
		noProxy:  make([]string, len(u.NoProxy)),
	}
	for i, glob := range u.NoProxy {
		p.noProxy[i] = strings.ToLower(glob)
	}
	if pu.User != nil {
		pass, _ := pu.User.Password()
		p.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pass))
	}
	if pu.Scheme == "https" {
		p.tls = &tls.Config{RootCAs: roots, ServerName: pu.Hostname(), MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}
	return p, nil
}

// String is the parent's URL without its password, for logs.
func (p *Parent) String() string { return p.redacted }

// NoProxy are the host globs reached directly (upstream.no_proxy), lower
// case.
func (p *Parent) NoProxy() []string { return p.noProxy }

// Carries reports whether connections to host go through the parent: there
// is one and host matches no upstream.no_proxy glob.
func (p *Parent) Carries(host string) bool {
	if p == nil {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, glob := range p.noProxy {
		if ok, _ := path.Match(glob, host); ok {
			return false
		}
	}
	return true
}

// ProxyFor is the Proxy of the upstream transports (relay and robots.txt
// fetches): the parent for a request it carries, once the egress guard has
// checked the request's destination; nil (direct, checked when dialled)
// otherwise. It is called for every request, each redirect of a robots.txt
// fetch included, and never looks at HTTP_PROXY/HTTPS_PROXY.
func (u *Upstream) ProxyFor(req *http.Request) (*url.URL, error) {
	r := u.opts.Route()
	host := req.URL.Hostname()
	if !r.Parent.Carries(host) {
		return nil, nil
	}
	if err := r.Guard.CheckHost(req.Context(), host, urlPort(req.URL)); err != nil {
		return nil, err
	}
	if req.URL.Scheme == "http" && req.URL.Opaque != "" && !strings.HasPrefix(req.URL.Opaque, "//") {
		// A request-target kept byte for byte (prepareUpstream) must still
		// reach the parent in absolute form: net/http writes an Opaque
		// "//host/path" as scheme:" //host/path".
		req.URL.Opaque = "//" + req.URL.Host + req.URL.Opaque
	}
	return r.Parent.url, nil
}

func urlPort(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// ParentError is a failure of the parent proxy: it could not be reached,
// or it refused a CONNECT (status) or robotsgate's credentials (407).
type ParentError struct {
	Status int   // the parent's answer, 0 when it gave none
	Err    error // the cause when Status is 0
}

func (e *ParentError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("parent proxy answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return "parent proxy: " + e.Err.Error()
}

func (e *ParentError) Unwrap() error { return e.Err }

// parentConnectResponse is the transports' OnProxyConnectResponse: a
// refused CONNECT becomes a ParentError (net/http makes it an error with
// the status text only).
func parentConnectResponse(_ context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
	if resp.StatusCode != http.StatusOK {
		return &ParentError{Status: resp.StatusCode}
	}
	return nil
}

// isParentFailure reports whether err is the parent proxy failing rather
// than the origin: not reached, TLS with it failed (net/http's
// "proxyconnect" errors), or a CONNECT or credentials refused.
func isParentFailure(err error) (*ParentError, bool) {
	var pe *ParentError
	if errors.As(err, &pe) {
		return pe, true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "proxyconnect" {
		return &ParentError{Err: err}, true
	}
	return nil, false
}

// parentFailure tells a parent's failure: 502 (504 for a timeout) with a
// fixed sentence, the cause in the log. A 407 means robotsgate's
// credentials (upstream.proxy) are wrong: a configuration error, not the
// origin's.
func (u *Upstream) parentFailure(ctx context.Context, host string, pe *ParentError, err error) Failure {
	status, proxyStatus := classify(err)
	body := "The origin could not be reached through the parent proxy."
	switch {
	case pe.Status == http.StatusProxyAuthRequired:
		status, proxyStatus = http.StatusBadGateway, "proxy_configuration_error"
		body = "The parent proxy refused robotsgate's credentials (upstream.proxy)."
	case pe.Status == http.StatusGatewayTimeout || status == http.StatusGatewayTimeout:
		status, proxyStatus = http.StatusGatewayTimeout, "connection_timeout"
		body = "The origin did not answer in time through the parent proxy."
	}
	if ctx.Err() == nil { // not the client leaving
		u.opts.Metrics.UpstreamErrors.WithLabelValues(proxyStatus).Inc()
		var parent string
		if p := u.opts.Route().Parent; p != nil {
			parent = p.redacted
		}
		u.opts.Log.Warn("upstream failed through the parent proxy", "url", host, "parent", parent, "status", status, "err", err)
	}
	return Failure{Status: status, ProxyError: proxyStatus, Message: body}
}

// dialParent connects to the parent proxy itself: no egress check (the
// operator chose it; the destination is checked before anything is sent
// to it), the dial bounded by DialTimeout.
func (u *Upstream) dialParent(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := u.opts.DialParent
	if dial == nil {
		dial = (&net.Dialer{Timeout: DialTimeout}).DialContext
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, err := dial(ctx, network, addr)
	if err != nil {
		return nil, &ParentError{Err: err}
	}
	return c, nil
}

// parentConnectTimeout bounds a blind tunnel's CONNECT through the parent:
// the TLS handshake with an https:// parent, and the parent's answer
// (it connects to the origin first).
const parentConnectTimeout = 60 * time.Second

// connectThroughParent opens a blind tunnel to addr through the parent:
// the egress guard checks addr first, then a CONNECT (with the parent's
// credentials) must be answered 2xx.
func (u *Upstream) connectThroughParent(ctx context.Context, r Route, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil || !httpguts.ValidHostHeader(addr) {
		return nil, fmt.Errorf("tunnel to %q: not a host:port", addr)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("tunnel to %q: bad port", addr)
	}
	if err := r.Guard.CheckHost(ctx, host, uint16(port)); err != nil {
		return nil, err
	}
	conn, err := u.dialParent(ctx, "tcp", r.Parent.addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, parentConnectTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) }) // the client left
	defer stop()
	tunnel, err := r.Parent.connect(ctx, conn, addr)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if !stop() { // cancelled meanwhile: the deadline is in the past
		tunnel.Close()
		return nil, context.Cause(ctx)
	}
	conn.SetDeadline(time.Time{})
	return wire.NewIdleConn(tunnel, ReadTimeout), nil
}

// connect speaks TLS to an https:// parent and sends the CONNECT.
func (p *Parent) connect(ctx context.Context, conn net.Conn, addr string) (net.Conn, error) {
	if p.tls != nil {
		tc := tls.Client(conn, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, &ParentError{Err: err}
		}
		conn = tc
	}
	head := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n"
	if p.auth != "" {
		head += "Proxy-Authorization: " + p.auth + "\r\n"
	}
	if _, err := conn.Write([]byte(head + "\r\n")); err != nil {
		return nil, &ParentError{Err: err}
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return nil, &ParentError{Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &ParentError{Status: resp.StatusCode}
	}
	if n := br.Buffered(); n > 0 { // the origin spoke first
		b, _ := br.Peek(n)
		return wire.WithPrefix(conn, append([]byte(nil), b...)), nil
	}
	return conn, nil
}
