package proxy

import (
	"crypto/ed25519"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
)

// auditFailureLogEvery is how often at most a failing audit log is
// reported in the operational log: a full disk fails every request.
const auditFailureLogEvery = time.Minute

// auditFailures rate-limits the ERROR lines of a failing audit log.
type auditFailures struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// writeAudit writes a record; a failure is never silent: an ERROR line (at
// most one a minute, with the count of those not reported),
// robotsgate_audit_write_failures_total, and /readyz not ready until a
// record is written again (audit.Writer.Failing).
func (s *Server) writeAudit(rec *audit.Record) {
	err := s.auditLog.Write(rec)
	if err == nil {
		return
	}
	f := &s.auditFails
	f.mu.Lock()
	now := time.Now()
	if now.Sub(f.last) < auditFailureLogEvery {
		f.suppressed++
		f.mu.Unlock()
		return
	}
	suppressed := f.suppressed
	f.last, f.suppressed = now, 0
	f.mu.Unlock()
	s.log.Error("audit record not written", "err", err, "url", rec.URL, "decision", rec.Decision,
		"not_reported_since_last", suppressed)
}

// openAudit opens the audit log with its evidence key (created on first
// use) signing its checkpoints.
func (s *Server) openAudit(l config.Log) error {
	if l.Audit == "" {
		return nil
	}
	var opts audit.Options
	if l.EvidenceKey != "" {
		key, created, err := audit.LoadOrCreateKey(l.EvidenceKey)
		if err != nil {
			return err
		}
		if created {
			s.log.Info("created the evidence key that signs the audit log's checkpoints", "path", l.EvidenceKey,
				"fingerprint", audit.KeyFingerprint(key.Public().(ed25519.PublicKey)))
		}
		opts.Key = key
	}
	opts.CheckpointEvery, opts.CheckpointRecords = l.CheckpointEvery.Duration(), int64(l.CheckpointRecords)
	w, err := audit.Open(l.Audit, opts)
	if err != nil {
		return err
	}
	s.auditLog = w
	return nil
}
