package proxy

import (
	"context"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/transparent"
	"github.com/robotsgate/robotsgate/witness"
)

// witnessCloseTimeout bounds how long a stop waits for the last
// checkpoints (the one Close writes) to be witnessed.
const witnessCloseTimeout = 5 * time.Second

// openWitness starts sending the audit log's checkpoints to log.witness,
// when one is set: their receipts go beside the log (its name +
// ".witness"). A witness that fails never refuses a request: the audit
// log is written as ever, and the failure is logged, counted
// (robotsgate_witness_failures_total) and makes /readyz fail until a
// checkpoint is witnessed again.
func (s *Server) openWitness(cfg config.Config) error {
	w := cfg.Log.Witness
	if w.URL == "" || cfg.Log.Audit == "" {
		return nil
	}
	key, err := witness.ParsePublicKey(w.Key)
	if err != nil {
		return err
	}
	roots, err := witness.Roots(w.CA)
	if err != nil {
		return err
	}
	o := witness.ClientOptions{URL: w.URL, Key: key, RootCAs: roots, Log: s.log}
	if cfg.Transparent.Mark != 0 { // not redirected back by the firewall rule
		o.DialContext = transparent.MarkedDialer(uint32(cfg.Transparent.Mark), dialTimeout).DialContext
	}
	if cfg.Log.Audit != "-" {
		o.Receipts = cfg.Log.Audit + ".witness"
	}
	c, err := witness.NewClient(o)
	if err != nil {
		return err
	}
	s.witness = c
	s.metrics.CounterFunc("robotsgate_witness_checkpoints_total", "Audit log checkpoints the witness (log.witness) acknowledged with a receipt.",
		func() float64 { return float64(c.Witnessed()) })
	s.metrics.CounterFunc("robotsgate_witness_failures_total", "Attempts to have a checkpoint witnessed that failed (unreachable, refused, a bad receipt).",
		func() float64 { return float64(c.Failures()) })
	s.metrics.CounterFunc("robotsgate_witness_dropped_total", "Checkpoints given up without a receipt (the queue full, or left at shutdown).",
		func() float64 { return float64(c.Dropped()) })
	s.metrics.GaugeFunc("robotsgate_witness_pending", "Checkpoints waiting to be witnessed.",
		func() float64 { return float64(c.Pending()) })
	s.metrics.GaugeFunc("robotsgate_witness_last_success_timestamp_seconds", "When the witness last acknowledged a checkpoint (Unix time; 0: never).",
		func() float64 {
			if t := c.LastWitnessed(); !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		})
	return nil
}

// onCheckpoint is the audit log's OnCheckpoint: nil without a witness.
func (s *Server) onCheckpoint() func(audit.Checkpoint) {
	if s.witness == nil {
		return nil
	}
	return s.witness.Submit
}

// closeWitness waits a little for the last checkpoints to be witnessed.
func (s *Server) closeWitness() {
	if s.witness == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), witnessCloseTimeout)
	defer cancel()
	s.witness.Close(ctx)
}
