package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/metrics"
)

// upstream sends allowed requests to origins. It never returns an error to
// goproxy: a failure becomes a 502 or 504 (403 for the egress guard) with a
// fixed body, because goproxy would otherwise close an intercepted tunnel
// without a response, or send raw dial errors, which reveal internal
// addresses, to the client.
type upstream struct {
	tr      *http.Transport
	log     *slog.Logger
	metrics *metrics.Metrics
}

func newUpstream(dial func(context.Context, string, string) (net.Conn, error), roots *x509.CertPool, log *slog.Logger, m *metrics.Metrics) *upstream {
	return &upstream{log: log, metrics: m, tr: &http.Transport{
		Proxy:                 nil, // never HTTP(S)_PROXY from the environment: a proxy loop
		DialContext:           dial,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		IdleConnTimeout:       upstreamIdleTimeout,
		ExpectContinueTimeout: time.Second,
		// goproxy's default of 2 idle connections per host makes a busy
		// origin redial constantly (SPEC §8).
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 256,
		// Bodies pass through as the origin encoded them.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
	}}
}

func (u *upstream) close() { u.tr.CloseIdleConnections() }

// RoundTrip implements goproxy.RoundTripper.
func (u *upstream) RoundTrip(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
	resp, err := u.tr.RoundTrip(req)
	if err == nil {
		return resp, nil
	}
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return egressDenied(req, denied), nil
	}
	status, proxyStatus := classifyUpstreamError(err)
	u.metrics.UpstreamErrors.WithLabelValues(proxyStatus).Inc()
	u.log.Info("upstream failed", "url", req.URL.Host, "status", status, "err", err)
	body := "The origin could not be reached."
	if status == http.StatusGatewayTimeout {
		body = "The origin did not answer in time."
	}
	return plainResponse(req, status, "upstream-error", proxyStatus, body), nil
}

// classifyUpstreamError maps a transport error to a status code and an RFC
// 9209 proxy error type.
func classifyUpstreamError(err error) (int, string) {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return http.StatusGatewayTimeout, "connection_timeout"
	case errors.As(err, &dnsErr):
		return http.StatusBadGateway, "dns_error"
	case errors.Is(err, syscall.ECONNREFUSED):
		return http.StatusBadGateway, "connection_refused"
	case errors.As(err, &certErr):
		return http.StatusBadGateway, "tls_certificate_error"
	}
	return http.StatusBadGateway, "destination_unavailable"
}
