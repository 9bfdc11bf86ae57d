package proxy

import (
	"net"
	"sort"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/admin"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/wire"
)

// A client that does not trust robotsgate's CA fails the handshake of an
// intercepted tunnel. It is the commonest set-up mistake, and the client
// usually says only "certificate verify failed", so the proxy makes it
// visible: a reason class for metrics and the status page (told by
// wire.TLSFailureReason), a WARN line (at most once per client address and
// host per tlsWarnEvery), and the CONNECT's audit record.

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
	reason, explain := wire.TLSFailureReason(err, s.caPath)
	s.metrics.ClientTLSFailures.WithLabelValues(reason).Inc()
	ip, _, err2 := net.SplitHostPort(clientAddr)
	if err2 != nil {
		ip = clientAddr
	}
	if s.tlsFails.record(reason, ip, host, explain, time.Now()) && reason != wire.TLSClosed {
		s.log.Warn("client TLS handshake failed", "client", clientAddr, "host", host, "reason", reason, "explain", explain, "err", err)
	}
	rec.refine(audit.ClientTLSFailed, explain)
}
