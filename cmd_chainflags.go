package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/compliance"
	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/witness"
)

// evidenceOpts are the flags verify and report share about what proves
// the logs: -legacy and the witness.
type evidenceOpts struct {
	legacy                         *bool
	witness, witnessKey, witnessCA *string
}

// evidenceFlags defines them on fs.
func evidenceFlags(fs *flag.FlagSet) *evidenceOpts {
	return &evidenceOpts{
		legacy:     fs.Bool("legacy", false, "accept audit lines without a link to the line before (written before robotsgate\nchained its logs); without it a log without a chain fails"),
		witness:    fs.String("witness", "", "check the log against what a witness saw: its `URL|FILE` (https://... as in\nlog.witness.url, or a file of its receipts, such as the log's .witness file)"),
		witnessKey: fs.String("witness-key", "", "the witness's public `KEY` (base64), which must sign every receipt (default: the\nconfiguration's log.witness.key)"),
		witnessCA:  fs.String("witness-ca", "", "PEM `FILE` of roots for the witness's certificate, beside the system's (default: the\nconfiguration's log.witness.ca)"),
	}
}

// chainOptions is what the chain is checked with.
type chainOptions struct {
	key        ed25519.PublicKey
	interval   audit.Interval
	witness    string // URL or file, "" for none
	witnessKey ed25519.PublicKey
	witnessCA  string
}

// options resolves the flags against the configuration.
func (e *evidenceOpts) options(cfg config.Config, pub ed25519.PublicKey) (chainOptions, error) {
	o := chainOptions{key: pub, interval: audit.Interval{Records: int64(cfg.Log.CheckpointRecords)}, witness: *e.witness,
		witnessCA: *e.witnessCA}
	if o.witness == "" {
		return o, nil
	}
	if pub == nil {
		return o, errors.New("-witness needs the evidence key (-key KEY): a witness's receipts are filed by it")
	}
	keyText := *e.witnessKey
	if keyText == "" {
		keyText = cfg.Log.Witness.Key
	}
	if keyText == "" {
		return o, errors.New("-witness needs the witness's key (-witness-key KEY, or log.witness.key)")
	}
	k, err := witness.ParsePublicKey(keyText)
	if err != nil {
		return o, fmt.Errorf("-witness-key: %v", err)
	}
	o.witnessKey = k
	if o.witnessCA == "" {
		o.witnessCA = cfg.Log.Witness.CA
	}
	return o, nil
}

// witnessFetchTimeout bounds reading a witness's list of receipts.
const witnessFetchTimeout = 2 * time.Minute

// maxWitnessed bounds the receipts read (about 150 bytes each in memory):
// years of checkpoints a minute.
const maxWitnessed = 4 << 20

// chainOptions reads what the witness saw, when one is named, and returns
// the options CheckChain takes. An error is a witness that could not be
// read, or a receipt that does not verify.
func (o chainOptions) chainOptions() (compliance.ChainOptions, error) {
	co := compliance.ChainOptions{Key: o.key, Interval: o.interval}
	if o.witness == "" {
		return co, nil
	}
	w := compliance.NewWitnessed()
	log := audit.KeyFingerprint(o.key)
	add := func(r *witness.Receipt) error {
		if w.Len() >= maxWitnessed {
			return fmt.Errorf("more than %d receipts", maxWitnessed)
		}
		w.Add(r.Checkpoint.Head, r.Checkpoint.Time)
		return nil
	}
	if strings.HasPrefix(o.witness, "https://") || strings.HasPrefix(o.witness, "http://") {
		roots, err := witness.Roots(o.witnessCA)
		if err != nil {
			return co, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), witnessFetchTimeout)
		defer cancel()
		if err := witness.FetchReceipts(ctx, witness.NewHTTPClient(roots, nil), o.witness, log, o.witnessKey, add); err != nil {
			return co, err
		}
	} else {
		f, err := os.Open(o.witness)
		if err != nil {
			return co, fmt.Errorf("witness: %w", err)
		}
		err = witness.ReadReceipts(f, o.witnessKey, log, add)
		f.Close()
		if err != nil {
			return co, fmt.Errorf("witness %s: %w", o.witness, err)
		}
	}
	co.Witness = w
	return co, nil
}
