package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
)

func TestCauseNamesRFC9209ErrorTypes(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&DeniedError{Host: "h", IP: netip.MustParseAddr("10.0.0.1"), Class: Private}, CauseDenied},
		{fmt.Errorf("get: %w", &net.DNSError{Err: "no such host", Name: "nx.example", IsNotFound: true}), CauseDNS},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, CauseRefused},
		{fmt.Errorf("fetch: %w", context.DeadlineExceeded), CauseTimeout},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, CauseTLSCert},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, CauseTLS},
		{errors.New("connection reset by peer"), CauseUnreachable},
	} {
		if got := Cause(tt.err); got != tt.want {
			t.Errorf("Cause(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
