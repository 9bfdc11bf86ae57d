package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/metrics"
)

// upstream sends allowed requests to origins. A failure becomes a 502 or
// 504 (403 for the egress guard) with a fixed body: raw dial errors reveal
// internal addresses.
type upstream struct {
	tr      *http.Transport
	log     *slog.Logger
	metrics *metrics.Metrics
	parent  func() *parentProxy // the current parent proxy (upstream.proxy), for logs
}

// proxy chooses the parent proxy of each request (upstream.proxy), nil
// for a direct connection.
func newUpstream(dial func(context.Context, string, string) (net.Conn, error), proxy func(*http.Request) (*url.URL, error),
	roots *x509.CertPool, log *slog.Logger, m *metrics.Metrics) *upstream {
	return &upstream{log: log, metrics: m, tr: &http.Transport{
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

func (u *upstream) close() { u.tr.CloseIdleConnections() }

// failure renders a failed exchange with the origin: the egress guard's
// refusal at dial time, or a 502/504 that names the cause only by its RFC
// 9209 type, never by the error's text.
func (u *upstream) failure(req *http.Request, err error) *http.Response {
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return egressDenied(req, denied)
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
	return plainResponse(req, status, audit.UpstreamError, proxyStatus, body)
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
