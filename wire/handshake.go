package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// A client that does not trust robotsgate's CA fails the handshake of an
// intercepted tunnel. It is the commonest set-up mistake, and the client
// usually says only "certificate verify failed", so the proxy makes it
// visible; what is here tells the failure from the bytes on the wire.

// Reasons of client TLS failures (metric label values), as
// TLSFailureReason returns them.
const (
	TLSUnknownCA = "unknown_ca"      // the client does not trust robotsgate's CA
	TLSBadCert   = "bad_certificate" // the client rejected the certificate otherwise
	TLSTimeout   = "handshake_timeout"
	// TLSClosedAtCert: the client hung up without an alert once it had
	// the certificate (Node.js does when it does not trust the CA).
	TLSClosedAtCert = "closed_after_certificate"
	TLSClosed       = "client_closed" // the client hung up during the handshake, before the certificate
	TLSOtherAlert   = "other_alert"   // the client sent another TLS alert
	TLSOther        = "other"         // any other failure
)

// TLSFailureReason classifies a failed server-side handshake, with a
// sentence for the log and audit record that names caPath, the CA
// certificate the client should trust (mitm.ca_cert, in the state
// directory by default).
func TLSFailureReason(err error, caPath string) (reason, explain string) {
	install := " (install " + caPath + " in its trust store)"
	if alert, ok := remoteAlert(err); ok {
		switch alert {
		case "tls: unknown certificate authority": // RFC 8446 §6.2, unknown_ca (OpenSSL's clients)
			return TLSUnknownCA, "unknown certificate authority: the client does not trust robotsgate's CA" + install
		case "tls: bad certificate", "tls: unsupported certificate", "tls: revoked certificate",
			"tls: expired certificate", "tls: unknown certificate":
			// Go's clients say bad_certificate where OpenSSL says unknown_ca.
			return TLSBadCert, "the client rejected robotsgate's certificate (" + alert + "): most often it does not trust robotsgate's CA" + install
		}
		return TLSOtherAlert, "the client ended the handshake: " + alert
	}
	var atCert *closedAtCertError
	switch {
	case errors.As(err, &atCert):
		return TLSClosedAtCert, "the client closed the connection once it had robotsgate's certificate, without a TLS alert: most often it does not trust robotsgate's CA" + install
	case errors.Is(err, os.ErrDeadlineExceeded):
		return TLSTimeout, "the client did not finish the TLS handshake in time"
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, context.Canceled):
		return TLSClosed, "the client closed the connection during the TLS handshake"
	}
	return TLSOther, "TLS handshake with the client failed: " + err.Error()
}

// remoteAlert returns the text of the TLS alert the client sent, if err is
// one: crypto/tls reports it as a *net.OpError "remote error" (or, over
// QUIC, a tls.AlertError), HandshakeRecorder as a *plainAlertError.
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

// HandshakeRecorder watches a client's TLS handshake so that a failure can be
// told by what the client sent. OpenSSL 3 clients (curl, Python) that
// reject the certificate of a TLS 1.3 handshake send their alert
// unencrypted, which crypto/tls, expecting it encrypted, reports as "bad
// record MAC"; Node.js closes the connection without an alert. So it keeps
// the first bytes the client sends (the records of the handshake) and
// whether anything was written to the client (the certificate, in the
// server's first flight).
//
// Pass it to tls.Server in place of the client's connection; once the
// handshake has failed, Failure says why, and once it has succeeded, Done
// ends the recording. It is not safe for concurrent use, which a
// handshake does not make of it.
type HandshakeRecorder struct {
	net.Conn
	read     []byte
	wrote    bool
	finished bool
	// muted: nothing more is written (a transparent connection passed
	// blind after its ClientHello: crypto/tls's alert must not reach the
	// client).
	muted bool
}

// RecordHandshake returns c recording: the first MaxHandshakeRecord bytes
// read from it until Done, and whether anything was written to it.
func RecordHandshake(c net.Conn) *HandshakeRecorder {
	return &HandshakeRecorder{Conn: c}
}

// MaxHandshakeRecord bounds what HandshakeRecorder keeps of the client's
// bytes: Received returning that many may have lost the rest.
const MaxHandshakeRecord = 16 << 10

// Read reads from the client's connection, keeping what it reads.
func (c *HandshakeRecorder) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.finished && len(c.read) < MaxHandshakeRecord {
		c.read = append(c.read, p[:min(n, MaxHandshakeRecord-len(c.read))]...)
	}
	return n, err
}

// errMuted is what a Write returns once the recorder is muted.
var errMuted = errors.New("the connection is passed on blind: nothing is written to the client")

// Write writes to the client's connection, remembering that it did, or
// writes nothing once the recorder is muted.
func (c *HandshakeRecorder) Write(p []byte) (int, error) {
	if c.muted {
		return 0, errMuted
	}
	c.wrote = true
	return c.Conn.Write(p)
}

// Done stops the recording once the handshake is complete, and lets its
// bytes go.
func (c *HandshakeRecorder) Done() { c.finished, c.read = true, nil }

// Mute makes every Write from now on write nothing (a connection passed
// on blind after its ClientHello: crypto/tls's alert must not reach the
// client, which will speak to the origin itself).
func (c *HandshakeRecorder) Mute() { c.muted = true }

// Received returns what the client sent so far (at most
// MaxHandshakeRecord bytes, nothing after Done): its ClientHello, to replay
// to an origin when the connection is passed on blind. The caller must
// not modify it.
func (c *HandshakeRecorder) Received() []byte { return c.read }

// Failure returns the handshake's error err, told more precisely when
// the client sent an unencrypted alert or hung up once it had the
// certificate, for TLSFailureReason; err itself stays in the chain
// (errors.Is, errors.As).
func (c *HandshakeRecorder) Failure(err error) error {
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
