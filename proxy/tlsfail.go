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
	tlsUnknownCA  = "unknown_ca"      // the client does not trust robotsgate's CA
	tlsBadCert    = "bad_certificate" // the client rejected the certificate otherwise
	tlsTimeout    = "handshake_timeout"
	tlsClosed     = "client_closed" // the client hung up during the handshake
	tlsOtherAlert = "other_alert"
	tlsOther      = "other"
)

// tlsFailureReason classifies a failed server-side handshake, with a
// sentence for the log and audit record.
func tlsFailureReason(err error) (reason, explain string) {
	if alert, ok := remoteAlert(err); ok {
		switch alert {
		case "tls: unknown certificate authority": // RFC 8446 §6.2, unknown_ca (OpenSSL's clients)
			return tlsUnknownCA, "unknown certificate authority: the client does not trust robotsgate's CA (install certs/ca.pem in its trust store)"
		case "tls: bad certificate", "tls: unsupported certificate", "tls: revoked certificate",
			"tls: expired certificate", "tls: unknown certificate":
			// Go's clients say bad_certificate where OpenSSL says unknown_ca.
			return tlsBadCert, "the client rejected robotsgate's certificate (" + alert + "): most often it does not trust robotsgate's CA (install certs/ca.pem in its trust store)"
		}
		return tlsOtherAlert, "the client ended the handshake: " + alert
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return tlsTimeout, "the client did not finish the TLS handshake in time"
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, context.Canceled):
		return tlsClosed, "the client closed the connection during the TLS handshake"
	}
	return tlsOther, "TLS handshake with the client failed: " + err.Error()
}

// remoteAlert returns the text of the TLS alert the client sent, if err is
// one: crypto/tls reports it as a *net.OpError "remote error" (or, over
// QUIC, a tls.AlertError).
func remoteAlert(err error) (string, bool) {
	var op *net.OpError
	var alert tls.AlertError
	switch {
	case errors.As(err, &op) && op.Op == "remote error" && op.Err != nil:
		return op.Err.Error(), true
	case errors.As(err, &alert):
		return alert.Error(), true
	}
	return "", false
}

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
func (s *Server) clientTLSFailed(err error, clientAddr, host string, slot *auditSlot) {
	reason, explain := tlsFailureReason(err)
	s.metrics.ClientTLSFailures.WithLabelValues(reason).Inc()
	ip, _, err2 := net.SplitHostPort(clientAddr)
	if err2 != nil {
		ip = clientAddr
	}
	if s.tlsFails.record(reason, ip, host, explain, time.Now()) && reason != tlsClosed {
		s.log.Warn("client TLS handshake failed", "client", clientAddr, "host", host, "reason", reason, "explain", explain, "err", err)
	}
	slot.refine(audit.ClientTLSFailed, explain)
}
