package wire

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

func TestTLSFailureReasons(t *testing.T) {
	for _, tt := range []struct {
		err    error
		reason string
		says   string
	}{
		{&net.OpError{Op: "remote error", Err: errors.New("tls: unknown certificate authority")}, TLSUnknownCA, "does not trust robotsgate's CA"},
		{fmt.Errorf("handshake: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}), TLSBadCert, "does not trust robotsgate's CA"},
		{tls.AlertError(48), TLSUnknownCA, "does not trust robotsgate's CA"},
		{tls.AlertError(40), TLSOtherAlert, "handshake failure"},
		{os.ErrDeadlineExceeded, TLSTimeout, "in time"},
		{io.EOF, TLSClosed, "closed"},
		{errors.New("tls: first record does not look like a TLS handshake"), TLSOther, "first record"},
		{&plainAlertError{alert: tls.AlertError(48), err: errors.New("local error: tls: bad record MAC")}, TLSUnknownCA, "does not trust robotsgate's CA"},
		{&closedAtCertError{io.EOF}, TLSClosedAtCert, "does not trust robotsgate's CA"},
	} {
		reason, says := TLSFailureReason(tt.err, "/var/lib/robotsgate/ca.pem")
		if reason != tt.reason || !strings.Contains(says, tt.says) {
			t.Errorf("%v: %s %q, want %s with %q", tt.err, reason, says, tt.reason, tt.says)
		}
	}
}

// OpenSSL 3 clients (curl, Python) that reject the certificate of a TLS 1.3
// handshake send an unencrypted alert after the ClientHello (and, with
// middlebox compatibility, a ChangeCipherSpec): it is found among the
// records; a handshake record or a truncated one is no alert.
func TestPlainAlertIsFoundAmongTheClientsRecords(t *testing.T) {
	hello := append([]byte{22, 3, 1, 0, 4}, 1, 0, 0, 0)
	ccs := []byte{20, 3, 3, 0, 1, 1}
	alert := []byte{21, 3, 3, 0, 2, 2, 48}
	for _, tt := range []struct {
		name string
		in   []byte
		desc uint8
		ok   bool
	}{
		{"hello, change cipher spec, alert", cat(hello, ccs, alert), 48, true},
		{"hello, alert", cat(hello, alert), 48, true},
		{"hello only", hello, 0, false},
		{"encrypted record", cat(hello, []byte{23, 3, 3, 0, 2, 2, 48}), 0, false},
		{"truncated alert", cat(hello, alert[:6]), 0, false},
		{"nothing", nil, 0, false},
	} {
		desc, ok := plainAlert(tt.in)
		if desc != tt.desc || ok != tt.ok {
			t.Errorf("%s: plainAlert = %d, %v; want %d, %v", tt.name, desc, ok, tt.desc, tt.ok)
		}
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
