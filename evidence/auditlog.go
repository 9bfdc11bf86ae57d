package evidence

import (
	"crypto/ed25519"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
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

// Write hands a record to the audit log's writer, which writes it in a
// batch with others. A failure is never silent: an ERROR line (at most
// one a minute, with the count of those not reported; auditWriteFailed),
// robotsgate_audit_write_failures_total, and /readyz not ready until a
// batch is written again (auditlog.Writer.Failing).
func (e *Evidence) Write(rec *audit.Record) {
	if err := e.auditLog.Write(rec); err != nil {
		e.auditWriteFailed(err, 1)
	}
}

// auditWriteFailed reports records the audit log lost (lost 0: a
// checkpoint or the head file): the writer calls it, off any request.
func (e *Evidence) auditWriteFailed(err error, lost int) {
	f := &e.fails
	f.mu.Lock()
	now := time.Now()
	if now.Sub(f.last) < auditFailureLogEvery {
		f.suppressed += lost
		f.mu.Unlock()
		return
	}
	suppressed := f.suppressed
	f.last, f.suppressed = now, 0
	f.mu.Unlock()
	e.log.Error("audit records not written", "err", err, "records", lost, "not_reported_since_last", suppressed)
}

// evidenceKey loads the evidence key (log.evidence_key), creating it on
// first use, when there is evidence to sign (an audit log or an archive);
// nil when there is no key or nothing to sign.
func (e *Evidence) evidenceKey(cfg *config.Config) (ed25519.PrivateKey, error) {
	if cfg.Log.EvidenceKey == "" || cfg.Log.Audit == "" && cfg.Archive.Dir == "" {
		return nil, nil
	}
	key, created, err := auditlog.LoadOrCreateKey(cfg.Log.EvidenceKey)
	if err != nil {
		return nil, err
	}
	if created {
		e.log.Info("created the evidence key that signs the audit log's checkpoints", "path", cfg.Log.EvidenceKey,
			"fingerprint", audit.KeyFingerprint(key.Public().(ed25519.PublicKey)))
	}
	return key, nil
}

// openAudit opens the audit log with the evidence key (nil: none) signing
// its checkpoints.
func (e *Evidence) openAudit(l config.Log) error {
	if l.Audit == "" {
		return nil
	}
	opts := auditlog.Options{Key: e.key, OnCheckpoint: e.onCheckpoint(), OnError: e.auditWriteFailed, Sync: l.AuditFsync}
	opts.CheckpointEvery, opts.CheckpointRecords = l.CheckpointEvery.Duration(), int64(l.CheckpointRecords)
	w, err := auditlog.Open(l.Audit, opts)
	if err != nil {
		return err
	}
	e.auditLog = w
	return nil
}
