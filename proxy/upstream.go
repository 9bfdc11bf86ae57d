package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/metrics"
	"github.com/robotsgate/robotsgate/paycrawl"
)

// upstream sends allowed requests to origins. A failure becomes a 502 or
// 504 (403 for the egress guard) with a fixed body: raw dial errors reveal
// internal addresses.
type upstream struct {
	tr      *http.Transport
	pinned  *lru.Cache[netip.AddrPort, *http.Transport] // by original destination (RoundTrip)
	pinMu   sync.Mutex
	log     *slog.Logger
	metrics *metrics.Metrics
	parent  func() *parentProxy // the current parent proxy (upstream.proxy), for logs
	// exchange is the exchange of a request the relay sends, from its
	// context (the transport's only channel); nil: none.
	exchange func(context.Context) *exchange
}

// exchange is what the upstream side is given of one proxied request (where
// it goes, how it is signed and paid for) and what it records of it, for
// the request's audit record: the origin's status, when the request was
// sent, how the origin's body failed, the pause its answer started, and
// what was paid.
type exchange struct {
	// pin, when valid, is the address the request goes to whatever its
	// name resolves to (a transparent client's original destination).
	pin netip.AddrPort
	// out signs the request for Web Bot Auth and pays under pay per
	// crawl; nil: it goes out unsigned.
	out *outbound
	// status is the origin's status code, 0 when it gave none.
	status int
	// sentAt is when the request's head was written to the origin (Unix
	// nanoseconds, 0: not measured), for its response time.
	sentAt atomic.Int64
	// body wraps the origin's response body (held here: one allocation
	// less per request); bodyErr is how that body failed, if it did.
	body    upstreamBody
	bodyErr error
	// pause is the origin's pause its answer started or lengthened.
	pause *audit.Pause
	// price is the crawler-price of the origin's 402 (pay per crawl) as
	// parsed, charged the crawler-charged of the paid retry's answer,
	// overcharged whether that is above the price, crawlerError an
	// origin's crawler-error.
	price, charged, crawlerError string
	overcharged                  bool
}

// proxy chooses the parent proxy of each request (upstream.proxy), nil
// for a direct connection.
func newUpstream(dial func(context.Context, string, string) (net.Conn, error), proxy func(*http.Request) (*url.URL, error),
	roots *x509.CertPool, log *slog.Logger, m *metrics.Metrics) *upstream {
	pinned, _ := lru.NewWithEvict(pinnedTransports, func(_ netip.AddrPort, tr *http.Transport) { tr.CloseIdleConnections() })
	return &upstream{log: log, metrics: m, pinned: pinned, tr: &http.Transport{
		// Never HTTP(S)_PROXY from the environment (a proxy loop): only the
		// configured parent.
		Proxy:                  proxy,
		OnProxyConnectResponse: parentConnectResponse,
		DialContext:            dial,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		ResponseHeaderTimeout:  responseHeaderTimeout,
		IdleConnTimeout:        upstreamIdleTimeout,
		ExpectContinueTimeout:  time.Second,
		// goproxy's default of 2 idle connections per host makes a busy
		// origin redial constantly (docs/benchmarks.md).
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 256,
		// Bodies pass through as the origin encoded them.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
	}}
}

func (u *upstream) close() {
	u.tr.CloseIdleConnections()
	u.pinned.Purge()
}

// pinnedTransports bounds the transports kept for transparent requests'
// destinations (each with its own pool of idle connections).
const pinnedTransports = 1024

// RoundTrip sends a request through the transport: a transparent
// request's through a transport of its own destination, whose connections
// all go to that address (a shared pool would reuse a connection to
// another address of the same name).
//
// A request judged for a client with a signer (outbound) is signed for Web
// Bot Auth first, and an origin's 402 with a crawler-price may be paid for
// (payPerCrawl).
func (u *upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	var x *exchange
	if u.exchange != nil {
		x = u.exchange(req.Context())
	}
	if x == nil {
		return u.tr.RoundTrip(req)
	}
	if x.out != nil {
		req = signedCopy(req, x.out.signer)
		u.metrics.SignedRequests.WithLabelValues("proxied").Inc()
	}
	resp, err := u.send(req, x.pin)
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
func (u *upstream) send(req *http.Request, pin netip.AddrPort) (*http.Response, error) {
	if !pin.IsValid() {
		return u.tr.RoundTrip(req)
	}
	return u.pinnedTransport(pin).RoundTrip(req)
}

func (u *upstream) pinnedTransport(dest netip.AddrPort) *http.Transport {
	if tr, ok := u.pinned.Get(dest); ok {
		return tr
	}
	u.pinMu.Lock()
	defer u.pinMu.Unlock()
	if tr, ok := u.pinned.Get(dest); ok {
		return tr
	}
	tr := u.tr.Clone()
	dial := u.tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p := u.parent(); p != nil && addr == p.addr {
			return dial(ctx, network, addr) // the parent proxy resolves the name itself
		}
		return dial(ctx, network, dest.String())
	}
	u.pinned.Add(dest, tr)
	return tr
}

// failure is the refusal that stands for a failed exchange with the
// origin at host (a request's, or a blind tunnel's whose client is ctx's):
// the egress guard's refusal at dial time, or a 502/504 that names the
// cause only by its RFC 9209 type, never by the error's text.
func (u *upstream) failure(ctx context.Context, host string, err error) *Refusal {
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return egressDenied(denied)
	}
	if pe, ok := isParentFailure(err); ok {
		return u.parentFailure(ctx, host, pe, err)
	}
	status, proxyStatus := classifyUpstreamError(err)
	if ctx.Err() == nil { // not the client leaving
		u.metrics.UpstreamErrors.WithLabelValues(proxyStatus).Inc()
		u.log.Info("upstream failed", "url", host, "status", status, "err", err)
	}
	body := "The origin could not be reached."
	switch {
	case status == http.StatusGatewayTimeout:
		body = "The origin did not answer in time."
	case proxyStatus == "http_upgrade_failed":
		body = "The origin switched protocols where the request did not ask for it."
	}
	return newRefusal(audit.UpstreamError, proxyStatus, body).withStatus(status)
}

// classifyUpstreamError maps a transport error to a status code and an RFC
// 9209 proxy error type.
func classifyUpstreamError(err error) (int, string) {
	if errors.Is(err, errUnrequestedUpgrade) {
		return http.StatusBadGateway, "http_upgrade_failed"
	}
	cause := egress.Cause(err)
	if cause == egress.CauseTimeout {
		return http.StatusGatewayTimeout, cause
	}
	return http.StatusBadGateway, cause
}
