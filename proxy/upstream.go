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

// pinKey is the context key of the address a transparent request's
// upstream connection must go to (its client's original destination).
type pinKey struct{}

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
	out, _ := req.Context().Value(outboundKey{}).(*outbound)
	if out != nil {
		req = signedCopy(req, out.signer)
		u.metrics.SignedRequests.WithLabelValues("proxied").Inc()
	}
	resp, err := u.send(req)
	if err == nil {
		noteCrawlerError(auditSlotOf(req.Context()), resp)
	}
	if err != nil || resp.StatusCode != http.StatusPaymentRequired || len(resp.Header[paycrawl.HeaderPrice]) == 0 {
		return resp, err
	}
	return u.payPerCrawl(req, resp, out)
}

// send sends a request through the transport of its destination.
func (u *upstream) send(req *http.Request) (*http.Response, error) {
	dest, ok := req.Context().Value(pinKey{}).(netip.AddrPort)
	if !ok {
		return u.tr.RoundTrip(req)
	}
	return u.pinnedTransport(dest).RoundTrip(req)
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

// failure renders a failed exchange with the origin: the egress guard's
// refusal at dial time, or a 502/504 that names the cause only by its RFC
// 9209 type, never by the error's text.
func (u *upstream) failure(req *http.Request, err error) *Refusal {
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return egressDenied(denied)
	}
	if pe, ok := isParentFailure(err); ok {
		return u.parentFailure(req, pe, err)
	}
	status, proxyStatus := classifyUpstreamError(err)
	if req.Context().Err() == nil { // not the client leaving
		u.metrics.UpstreamErrors.WithLabelValues(proxyStatus).Inc()
		u.log.Info("upstream failed", "url", req.URL.Host, "status", status, "err", err)
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
