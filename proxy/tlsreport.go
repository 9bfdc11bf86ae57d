package proxy

import (
	"net"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/wire"
)

// A client that does not trust robotsgate's CA fails the handshake of an
// intercepted tunnel. It is the commonest set-up mistake, and the client
// usually says only "certificate verify failed", so the proxy makes it
// visible: a reason class for metrics and the status page (told by
// wire.TLSFailureReason, counted by admin.TLSFailures), a WARN line (at
// most once per client address and host per admin.TLSWarnEvery), and the
// CONNECT's audit record.

// clientTLSFailed records a failed handshake of an intercepted tunnel.
func (s *Server) clientTLSFailed(err error, clientAddr, host string, rec *record) {
	reason, explain := wire.TLSFailureReason(err, s.caPath)
	s.metrics.ClientTLSFailures.WithLabelValues(reason).Inc()
	ip, _, err2 := net.SplitHostPort(clientAddr)
	if err2 != nil {
		ip = clientAddr
	}
	if s.tlsFails.Record(reason, ip, host, explain, time.Now()) && reason != wire.TLSClosed {
		s.log.Warn("client TLS handshake failed", "client", clientAddr, "host", host, "reason", reason, "explain", explain, "err", err)
	}
	rec.refine(audit.ClientTLSFailed, explain)
}
