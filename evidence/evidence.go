// Package evidence is what robotsgate keeps as evidence of its decisions,
// opened from the configuration: the evidence key (log.evidence_key), the
// audit log (log.audit) with its checkpoints sent to a witness
// (log.witness), and the robots.txt archive (archive.dir), which keeps
// the fetch lines and bodies of robots.txt, tdmrep.json and RSL
// documents. Their failures are never silent: the operational log, the
// metrics, and /readyz (Failing).
//
// The proxy writes a record per request (Write) and hands the resolver's
// and the document caches' answers to the archive (OnRobots, OnTDMRep,
// OnRSL); it decides nothing here.
package evidence

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/auditlog"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/metrics"
	"github.com/robotsgate/robotsgate/witness"
)

// Evidence is the audit log, its witness and the robots.txt archive of
// one robotsgate instance; each is nil when the configuration has none
// (its methods then do nothing).
type Evidence struct {
	log      *slog.Logger
	metrics  *metrics.Metrics
	key      ed25519.PrivateKey // nil: none, or nothing to sign
	auditLog *auditlog.Writer
	witness  *witness.Client
	archive  *archive.Writer // nil: archive.dir is ""
	fails    auditFailures
}

// Open loads the evidence key, creating it on first use, and starts the
// robots.txt archive (archive.dir): what the resolver's and caches' answers
// go to. OpenLog opens the audit log and its witness, once they exist.
func Open(cfg config.Config, log *slog.Logger, m *metrics.Metrics) (*Evidence, error) {
	e := &Evidence{log: log, metrics: m}
	var err error
	if e.key, err = e.evidenceKey(&cfg); err != nil {
		return nil, err
	}
	if err := e.openArchive(cfg.Archive); err != nil {
		return nil, err
	}
	return e, nil
}

// OpenLog starts the witness of log.witness, dialled with dial (nil: the
// default dialer), and opens the audit log with the evidence key signing
// its checkpoints.
func (e *Evidence) OpenLog(cfg config.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) error {
	if err := e.openWitness(cfg, dial); err != nil {
		return fmt.Errorf("log.witness: %w", err)
	}
	return e.openAudit(cfg.Log)
}

// Close writes the audit log's last records and checkpoint, waits a
// little for the witness to acknowledge them, and closes the archive.
func (e *Evidence) Close() {
	e.auditLog.Close()
	e.closeWitness()
	if e.archive != nil {
		e.archive.Close()
	}
}

// Reopen reopens the audit log file, for log rotation (SIGHUP).
func (e *Evidence) Reopen() error { return e.auditLog.Reopen() }

// AuditFailing is why the last audit record could not be written, nil
// when it was (log.audit_on_error refuses requests meanwhile).
func (e *Evidence) AuditFailing() error { return e.auditLog.Failing() }

// Failing is what /readyz reports of the evidence: an audit log that
// cannot be written, a witness that did not acknowledge the last
// checkpoint; nil when neither.
func (e *Evidence) Failing() error {
	if err := e.auditLog.Failing(); err != nil {
		return fmt.Errorf("the audit log cannot be written: %w", err)
	}
	if e.witness != nil {
		if err := e.witness.Failing(); err != nil {
			return fmt.Errorf("the witness did not acknowledge the last checkpoint (requests are served): %w", err)
		}
	}
	return nil
}

// Archive is the robots.txt archive, nil without archive.dir.
func (e *Evidence) Archive() *archive.Writer { return e.archive }

// RegisterMetrics registers the counts of audit records and archive
// records not written (the witness's are registered as it starts).
func (e *Evidence) RegisterMetrics(m *metrics.Metrics) {
	m.CounterFunc("robotsgate_audit_write_failures_total", "Audit records not written (a full disk, an unwritable file).",
		func() float64 { return float64(e.auditLog.Failures()) })
	m.CounterFunc("robotsgate_archive_dropped_total", "robots.txt archive records not written (queue full or disk error).",
		func() float64 {
			if e.archive == nil {
				return 0
			}
			return float64(e.archive.Dropped())
		})
}
