package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"syscall"
)

// Causes of a failure to reach a destination, named as RFC 9209's
// Proxy-Status error types, so one name serves the log, the audit record,
// the metrics and the client's Proxy-Status header.
const (
	CauseDenied      = "destination_ip_prohibited" // the egress guard refused it
	CauseDNS         = "dns_error"
	CauseRefused     = "connection_refused"
	CauseTimeout     = "connection_timeout"
	CauseTLSCert     = "tls_certificate_error" // the destination's certificate is not trusted
	CauseTLS         = "tls_protocol_error"
	CauseUnreachable = "destination_unavailable" // no route, reset, closed early
)

// Cause classifies an error of dialling, a TLS handshake or an exchange
// with a destination. Errors it cannot place are CauseUnreachable.
func Cause(err error) string {
	var denied *DeniedError
	var port *PortError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.As(err, &denied), errors.As(err, &port):
		return CauseDenied
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return CauseTimeout
	case errors.As(err, &dnsErr):
		return CauseDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return CauseRefused
	case errors.As(err, &certErr):
		return CauseTLSCert
	case errors.As(err, &recordErr):
		return CauseTLS
	}
	return CauseUnreachable
}
