package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
)

// A client that does not trust robotsgate's CA fails the handshake of an
// intercepted tunnel. It is the commonest set-up mistake, and the client
// usually says only "certificate verify failed", so the proxy makes it
// visible: a reason class for metrics and the status page, a WARN line
// (at most once per client address and host per tlsWarnEvery), and the
// CONNECT's audit record.

// Reasons of client TLS failures (metric label values).
const (
	tlsUnknownCA = "unknown_ca"      // the client does not trust robotsgate's CA
	tlsBadCert   = "bad_certificate" // the client rejected the certificate otherwise
	tlsTimeout   = "handshake_timeout"
	// tlsClosedAtCert: the client hung up without an alert once it had
	// the certificate (Node.js does when it does not trust the CA).
	tlsClosedAtCert = "closed_after_certificate"
	tlsClosed       = "client_closed" // the client hung up during the handshake, before the certificate
	tlsOtherAlert   = "other_alert"
	tlsOther        = "other"
)

// tlsFailureReason classifies a failed server-side handshake, with a
// sentence for the log and audit record that names caPath, the CA
// certificate the client should trust (mitm.ca_cert, in the state
// directory by default).
func tlsFailureReason(err error, caPath string) (reason, explain string) {
	install := " (install " + caPath + " in its trust store)"
	if alert, ok := remoteAlert(err); ok {
		switch alert {
		case "tls: unknown certificate authority": // RFC 8446 §6.2, unknown_ca (OpenSSL's clients)
			return tlsUnknownCA, "unknown certificate authority: the client does not trust robotsgate's CA" + install
		case "tls: bad certificate", "tls: unsupported certificate", "tls: revoked certificate",
			"tls: expired certificate", "tls: unknown certificate":
			// Go's clients say bad_certificate where OpenSSL says unknown_ca.
			return tlsBadCert, "the client rejected robotsgate's certificate (" + alert + "): most often it does not trust robotsgate's CA" + install
		}
		return tlsOtherAlert, "the client ended the handshake: " + alert
	}
	var atCert *closedAtCertError
	switch {
	case errors.As(err, &atCert):
		return tlsClosedAtCert, "the client closed the connection once it had robotsgate's certificate, without a TLS alert: most often it does not trust robotsgate's CA" + install
	case errors.Is(err, os.ErrDeadlineExceeded):
		return tlsTimeout, "the client did not finish the TLS handshake in time"
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, context.Canceled):
		return tlsClosed, "the client closed the connection during the TLS handshake"
	}
	return tlsOther, "TLS handshake with the client failed: " + err.Error()
}

// remoteAlert returns the text of the TLS alert the client sent, if err is
// one: crypto/tls reports it as a *net.OpError "remote error" (or, over
// QUIC, a tls.AlertError), handshakeConn as a *plainAlertError.
func remoteAlert(err error) (string, bool) {
	var op *net.OpError
	var alert tls.AlertError
	var plain *plainAlertError
	switch {
	case errors.As(err, &plain):
		return plain.alert.Error(), true
	case errors.As(err, &op) && op.Op == "remote error" && op.Err != nil:
		return op.Err.Error(), true
	case errors.As(err, &alert):
		return alert.Error(), true
	}
	return "", false
}

// handshakeConn watches a client's TLS handshake so that a failure can be
// told by what the client sent. OpenSSL 3 clients (curl, Python) that
// reject the certificate of a TLS 1.3 handshake send their alert
// unencrypted, which crypto/tls, expecting it encrypted, reports as "bad
// record MAC"; Node.js closes the connection without an alert. So it keeps
// the first bytes the client sends (the records of the handshake) and
// whether anything was written to the client (the certificate, in the
// server's first flight).
type handshakeConn struct {
	net.Conn
	read     []byte
	wrote    bool
	finished bool
	// muted: nothing more is written (a transparent connection passed
	// blind after its ClientHello: crypto/tls's alert must not reach the
	// client).
	muted bool
}

// maxHandshakeRecord bounds what handshakeConn keeps of the client's bytes.
const maxHandshakeRecord = 16 << 10

func (c *handshakeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.finished && len(c.read) < maxHandshakeRecord {
		c.read = append(c.read, p[:min(n, maxHandshakeRecord-len(c.read))]...)
	}
	return n, err
}

func (c *handshakeConn) Write(p []byte) (int, error) {
	if c.muted {
		return 0, errBlind
	}
	c.wrote = true
	return c.Conn.Write(p)
}

// done stops the watch once the handshake is complete.
func (c *handshakeConn) done() { c.finished, c.read = true, nil }

// failure returns the handshake's error err, told more precisely when
// the client sent an unencrypted alert (a *plainAlertError) or hung up
// once it had the certificate (a *closedAtCertError).
func (c *handshakeConn) failure(err error) error {
	if _, ok := remoteAlert(err); ok {
		return err
	}
	if desc, ok := plainAlert(c.read); ok {
		return &plainAlertError{alert: tls.AlertError(desc), err: err}
	}
	if c.wrote && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		return &closedAtCertError{err}
	}
	return err
}

// plainAlert finds an unencrypted alert record (content type 21, two
// bytes: level and description, RFC 8446 §6) among the TLS records b
// begins with, and returns its description.
func plainAlert(b []byte) (uint8, bool) {
	for len(b) >= 5 {
		n := int(b[3])<<8 | int(b[4])
		if len(b) < 5+n {
			return 0, false
		}
		if b[0] == 21 && n == 2 {
			return b[6], true
		}
		b = b[5+n:]
	}
	return 0, false
}

// plainAlertError is a handshake the client ended with an unencrypted
// alert.
type plainAlertError struct {
	alert tls.AlertError
	err   error
}

func (e *plainAlertError) Error() string {
	return "the client sent the alert " + e.alert.Error() + " (" + e.err.Error() + ")"
}
func (e *plainAlertError) Unwrap() error { return e.err }

// closedAtCertError is a client that hung up once it had the certificate.
type closedAtCertError struct{ err error }

func (e *closedAtCertError) Error() string {
	return "the client closed the connection after the server's certificate: " + e.err.Error()
}
func (e *closedAtCertError) Unwrap() error { return e.err }

// tlsWarnEvery is how often a client's TLS failures to one host are logged.
const tlsWarnEvery = time.Minute

// maxTLSWarned bounds the client and host pairs whose last warning is
// remembered (keys of at most an address and a 253-byte host: under 4 MB).
const maxTLSWarned = 10000

// tlsFailures counts client TLS failures by reason and remembers when each
// client and host was last logged.
type tlsFailures struct {
	mu      sync.Mutex
	counts  map[string]int64
	warned  map[string]time.Time // client IP + " " + host
	lastErr string
}

// record counts a failure and reports whether it should be logged now.
func (f *tlsFailures) record(reason, clientIP, host, explain string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts, f.warned = map[string]int64{}, map[string]time.Time{}
	}
	f.counts[reason]++
	f.lastErr = explain
	key := clientIP + " " + host
	if last, ok := f.warned[key]; ok && now.Sub(last) < tlsWarnEvery {
		return false
	}
	if len(f.warned) >= maxTLSWarned { // bounded: forget the old entries
		for k, t := range f.warned {
			if now.Sub(t) >= tlsWarnEvery {
				delete(f.warned, k)
			}
		}
		if len(f.warned) >= maxTLSWarned { // all recent (a flood): forget them all
			clear(f.warned)
		}
	}
	f.warned[key] = now
	return true
}

// snapshot returns the counts by reason (largest first) and the last
// explanation.
func (f *tlsFailures) snapshot() ([]admin.TLSFailureCount, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]admin.TLSFailureCount, 0, len(f.counts))
	for r, n := range f.counts {
		out = append(out, admin.TLSFailureCount{Reason: r, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Count > out[j].Count || out[i].Count == out[j].Count && out[i].Reason < out[j].Reason
	})
	return out, f.lastErr
}

// clientTLSFailed records a failed handshake of an intercepted tunnel.
func (s *Server) clientTLSFailed(err error, clientAddr, host string, rec *record) {
	reason, explain := tlsFailureReason(err, s.caPath)
	s.metrics.ClientTLSFailures.WithLabelValues(reason).Inc()
	ip, _, err2 := net.SplitHostPort(clientAddr)
	if err2 != nil {
		ip = clientAddr
	}
	if s.tlsFails.record(reason, ip, host, explain, time.Now()) && reason != tlsClosed {
		s.log.Warn("client TLS handshake failed", "client", clientAddr, "host", host, "reason", reason, "explain", explain, "err", err)
	}
	rec.refine(audit.ClientTLSFailed, explain)
}
