package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/metrics"
	"github.com/robotsgate/robotsgate/paycrawl"
	"github.com/robotsgate/robotsgate/wire"
)

// Timeouts of talking to an origin, each phase bounded.
const (
	// DialTimeout bounds a dial, to an origin or to the parent proxy.
	DialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 60 * time.Second
	idleTimeout           = 90 * time.Second // idle pooled upstream connection
	// ReadTimeout is how long an upstream connection may stay silent
	// inside a response or a tunnel.
	ReadTimeout = 120 * time.Second
)

// Route is what a configuration reload changes of the upstream side: the
// egress guard every connection passes, and the parent proxy (nil:
// direct).
type Route struct {
	Guard  *egress.Guard
	Parent *Parent
}

// Options configure an Upstream.
type Options struct {
	// Route is the configuration's current route, asked for each
	// connection and request.
	Route func() Route
	// Exchange is the exchange of a request the proxy sends, from its
	// context (the transport's only channel); nil: none.
	Exchange func(context.Context) *Exchange
	// Hold, when set, is asked right before a request is sent: an error
	// keeps the request from the origin and is the RoundTrip's (the
	// proxy's last look at its decision: an origin paused since).
	Hold func(context.Context) error
	// DialParent connects to the parent proxy (the egress guard dials
	// origins itself); nil: a plain dialer.
	DialParent egress.DialFunc
	Roots      *x509.CertPool // verify origins and an https:// parent
	Log        *slog.Logger
	Metrics    *metrics.Metrics
}

// Upstream sends allowed requests to origins and opens blind tunnels to
// them. A failure is told by its RFC 9209 type (Failure): raw dial errors
// reveal internal addresses.
type Upstream struct {
	opts   Options
	tr     *http.Transport
	pinned *lru.Cache[netip.AddrPort, *http.Transport] // by original destination (RoundTrip)
	pinMu  sync.Mutex
}

// New returns the upstream side of opts.
func New(opts Options) *Upstream {
	u := &Upstream{opts: opts}
	u.pinned, _ = lru.NewWithEvict(pinnedTransports, func(_ netip.AddrPort, tr *http.Transport) { tr.CloseIdleConnections() })
	u.tr = NewTransport(u.Dial, u.ProxyFor, opts.Roots)
	return u
}

// NewTransport is the transport of requests to origins: dial connects,
// proxy chooses the parent proxy of each request (nil: direct), roots
// verify origins.
func NewTransport(dial egress.DialFunc, proxy func(*http.Request) (*url.URL, error), roots *x509.CertPool) *http.Transport {
	return &http.Transport{
		// Never HTTP(S)_PROXY from the environment (a proxy loop): only the
		// configured parent.
		Proxy:                  proxy,
		OnProxyConnectResponse: parentConnectResponse,
		DialContext:            dial,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		ResponseHeaderTimeout:  responseHeaderTimeout,
		IdleConnTimeout:        idleTimeout,
		ExpectContinueTimeout:  time.Second,
		// goproxy's default of 2 idle connections per host makes a busy
		// origin redial constantly (docs/benchmarks.md).
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 256,
		// Bodies pass through as the origin encoded them.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
	}
}

// Transport is the transport every request to an origin shares (pinned
// ones aside): goproxy's, and /explain's fetch.
func (u *Upstream) Transport() *http.Transport { return u.tr }

// Close closes the idle connections.
func (u *Upstream) Close() {
	u.tr.CloseIdleConnections()
	u.pinned.Purge()
}

// Roots are the system's roots plus those of file (mitm.upstream_ca, ""
// for none): what upstream TLS trusts.
func Roots(file string) (*x509.CertPool, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if file == "" {
		return roots, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("mitm.upstream_ca: %w", err)
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("mitm.upstream_ca: no certificate in %s", file)
	}
	return roots, nil
}

// pinnedTransports bounds the transports kept for transparent requests'
// destinations (each with its own pool of idle connections).
const pinnedTransports = 1024

// RoundTrip sends a request through the transport: a transparent
// request's through a transport of its own destination, whose connections
// all go to that address (a shared pool would reuse a connection to
// another address of the same name).
//
// A request judged for a client with a signer (Exchange.Sign) is signed
// for Web Bot Auth first, and an origin's 402 with a crawler-price may be
// paid for (payPerCrawl).
func (u *Upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	var x *Exchange
	if u.opts.Exchange != nil {
		x = u.opts.Exchange(req.Context())
	}
	if x == nil {
		return u.tr.RoundTrip(req)
	}
	if x.Sign != nil {
		req = SignedCopy(req, x.Sign.Signer)
		u.opts.Metrics.SignedRequests.WithLabelValues("proxied").Inc()
	}
	if u.opts.Hold != nil {
		if err := u.opts.Hold(req.Context()); err != nil {
			return nil, err
		}
	}
	resp, err := u.send(req, x.pin())
	if err == nil {
		x.noteCrawlerError(resp)
	}
	if err != nil || resp.StatusCode != http.StatusPaymentRequired || len(resp.Header[paycrawl.HeaderPrice]) == 0 {
		return resp, err
	}
	return u.payPerCrawl(req, resp, x)
}

// send sends a request through the transport of its destination: pin's
// when valid.
func (u *Upstream) send(req *http.Request, pin netip.AddrPort) (*http.Response, error) {
	if !pin.IsValid() {
		return u.tr.RoundTrip(req)
	}
	return u.pinnedTransport(pin).RoundTrip(req)
}

func (u *Upstream) pinnedTransport(dest netip.AddrPort) *http.Transport {
	if tr, ok := u.pinned.Get(dest); ok {
		return tr
	}
	u.pinMu.Lock()
	defer u.pinMu.Unlock()
	if tr, ok := u.pinned.Get(dest); ok {
		return tr
	}
	tr := u.tr.Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p := u.opts.Route().Parent; p != nil && addr == p.addr {
			return u.Dial(ctx, network, addr) // the parent proxy resolves the name itself
		}
		return u.Dial(ctx, network, dest.String())
	}
	u.pinned.Add(dest, tr)
	return tr
}

// Dial connects to an origin through the current egress guard, or to the
// parent proxy (the destination was checked by ProxyFor); upstream
// connections get a read deadline refreshed by traffic, so a silent origin
// cannot hold a request or tunnel forever.
func (u *Upstream) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r := u.opts.Route()
	dial := r.Guard.DialContext
	if r.Parent != nil && addr == r.Parent.addr {
		dial = u.dialParent
	}
	c, err := dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return wire.NewIdleConn(c, ReadTimeout), nil
}

// DialBlind connects a blind tunnel to addr (host:port), the one dial of
// every blind tunnel (a CONNECT's, a SOCKS5 client's, a transparent
// connection's): through the parent proxy when it carries host, else
// through the egress guard, to pin when valid (a transparent client's
// original destination).
func (u *Upstream) DialBlind(ctx context.Context, addr string, pin netip.AddrPort) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	if r := u.opts.Route(); r.Parent.Carries(host) {
		return u.connectThroughParent(ctx, r, addr)
	}
	if pin.IsValid() {
		addr = pin.String()
	}
	return u.Dial(ctx, "tcp", addr)
}

// Failure is a failed exchange with an origin as its client is told of
// it: the egress guard's refusal at dial time (Denied), or a status (502,
// 504) with the cause's RFC 9209 type and a fixed sentence.
type Failure struct {
	Denied     *egress.DeniedError
	Status     int
	ProxyError string
	Message    string
}

// ErrUnrequestedUpgrade is an origin's 101 to a request that did not ask
// for that protocol: relaying it would turn the client's connection into a
// pipe that carries later requests to the origin unjudged.
var ErrUnrequestedUpgrade = errors.New("the origin switched to a protocol the request did not ask for")

// Failure tells a failed exchange with the origin at host (a request's,
// or a blind tunnel's, whose client is ctx's), counting and logging it
// unless the client left.
func (u *Upstream) Failure(ctx context.Context, host string, err error) Failure {
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return Failure{Denied: denied}
	}
	if pe, ok := isParentFailure(err); ok {
		return u.parentFailure(ctx, host, pe, err)
	}
	status, proxyStatus := classify(err)
	if ctx.Err() == nil { // not the client leaving
		u.opts.Metrics.UpstreamErrors.WithLabelValues(proxyStatus).Inc()
		u.opts.Log.Info("upstream failed", "url", host, "status", status, "err", err)
	}
	msg := "The origin could not be reached."
	switch {
	case status == http.StatusGatewayTimeout:
		msg = "The origin did not answer in time."
	case proxyStatus == "http_upgrade_failed":
		msg = "The origin switched protocols where the request did not ask for it."
	}
	return Failure{Status: status, ProxyError: proxyStatus, Message: msg}
}

// classify maps a transport error to a status code and an RFC 9209 proxy
// error type.
func classify(err error) (int, string) {
	if errors.Is(err, ErrUnrequestedUpgrade) {
		return http.StatusBadGateway, "http_upgrade_failed"
	}
	cause := egress.Cause(err)
	if cause == egress.CauseTimeout {
		return http.StatusGatewayTimeout, cause
	}
	return http.StatusBadGateway, cause
}
