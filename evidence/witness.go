package evidence

import (
	"context"
	"net"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
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
func (e *Evidence) openWitness(cfg config.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) error {
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
	o := witness.ClientOptions{URL: w.URL, Key: key, RootCAs: roots, Log: e.log, DialContext: dial}
	if cfg.Log.Audit != "-" {
		o.Receipts = cfg.Log.Audit + ".witness"
	}
	c, err := witness.NewClient(o)
	if err != nil {
		return err
	}
	e.witness = c
	e.metrics.CounterFunc("robotsgate_witness_checkpoints_total", "Audit log checkpoints the witness (log.witness) acknowledged with a receipt.",
		func() float64 { return float64(c.Witnessed()) })
	e.metrics.CounterFunc("robotsgate_witness_failures_total", "Attempts to have a checkpoint witnessed that failed (unreachable, refused, a bad receipt).",
		func() float64 { return float64(c.Failures()) })
	e.metrics.CounterFunc("robotsgate_witness_dropped_total", "Checkpoints given up without a receipt (the queue full, or left at shutdown).",
		func() float64 { return float64(c.Dropped()) })
	e.metrics.GaugeFunc("robotsgate_witness_pending", "Checkpoints waiting to be witnessed.",
		func() float64 { return float64(c.Pending()) })
	e.metrics.GaugeFunc("robotsgate_witness_last_success_timestamp_seconds", "When the witness last acknowledged a checkpoint (Unix time; 0: never).",
		func() float64 {
			if t := c.LastWitnessed(); !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		})
	return nil
}

// onCheckpoint is the audit log's OnCheckpoint: nil without a witness.
func (e *Evidence) onCheckpoint() func(audit.Checkpoint) {
	if e.witness == nil {
		return nil
	}
	return e.witness.Submit
}

// closeWitness waits a little for the last checkpoints to be witnessed.
func (e *Evidence) closeWitness() {
	if e.witness == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), witnessCloseTimeout)
	defer cancel()
	e.witness.Close(ctx)
}
