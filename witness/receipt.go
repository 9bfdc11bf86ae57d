// Package witness keeps the audit log's checkpoints somewhere the
// operator of robotsgate does not write alone, so that whoever holds the
// evidence key cannot rewrite the log's history and sign it again
// unnoticed: a witness, run by someone else (a reviewer, a review board, a
// customer), receives the head of every checkpoint as it is signed and
// answers with a receipt signed by its own key. robotsgate keeps the
// receipts beside the log (Client); `robotsgate verify -witness` checks
// the log against the witness's list, or against the receipts.
//
// The protocol is HTTPS and JSON:
//
//	POST /v1/checkpoints      body: a checkpoint (audit.Checkpoint) as the log holds it
//	                          200: its Receipt; 403: the witness does not witness that key;
//	                          409: the checkpoint is older than one the witness already saw
//	                          of that log, or too old or too new by its clock
//	GET  /v1/checkpoints?log=FINGERPRINT
//	                          200: every Receipt of that log, one JSON object a line, oldest first
//
// A witness accepts the checkpoints of the evidence keys it was given
// (their signatures checked), each log's in the order of their time and
// within a few minutes of its own clock: a checkpoint signed today with
// last month's time is refused, so a rewritten history cannot be
// witnessed after the fact.
package witness

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// Receipt is a witness's statement that it saw a checkpoint of a log at
// a time of its own clock.
type Receipt struct {
	// Log is the fingerprint of the evidence key that signs the log
	// (audit.KeyFingerprint).
	Log string `json:"log"`
	// Checkpoint is the checkpoint as the log holds it, its signature
	// included.
	Checkpoint audit.Checkpoint `json:"checkpoint"`
	// WitnessedAt is when the witness received it (its clock, UTC).
	WitnessedAt time.Time `json:"witnessed_at"`
	// Witness is the fingerprint of the witness's key; Signature its
	// Ed25519 signature of SignedText, base64.
	Witness   string `json:"witness"`
	Signature string `json:"signature"`
}

// SignedText is what a receipt's signature covers, with a context string
// so that it means nothing else.
func (r *Receipt) SignedText() []byte {
	return []byte("robotsgate witness receipt v1\n" + r.Log + "\n" + r.Checkpoint.Head + "\n" +
		r.Checkpoint.Time.UTC().Format(time.RFC3339Nano) + "\n" + strconv.FormatInt(r.Checkpoint.Records, 10) + "\n" +
		r.WitnessedAt.UTC().Format(time.RFC3339Nano) + "\n")
}

// Verify checks that the receipt is signed by the witness key pub and is
// about a checkpoint of the log of fingerprint log ("" for any).
func (r *Receipt) Verify(pub ed25519.PublicKey, log string) error {
	sig, err := base64.StdEncoding.DecodeString(r.Signature)
	switch {
	case log != "" && r.Log != log:
		return fmt.Errorf("a receipt for the log of key %s, not %s", r.Log, log)
	case r.Checkpoint.Key != r.Log:
		return fmt.Errorf("a receipt for the log of key %s holds a checkpoint signed by %s", r.Log, r.Checkpoint.Key)
	case err != nil || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, r.SignedText(), sig):
		return fmt.Errorf("the receipt of the checkpoint of %s is not signed by the witness key %s (it names %s)",
			r.Checkpoint.Time.UTC().Format(time.RFC3339Nano), audit.KeyFingerprint(pub), r.Witness)
	}
	return nil
}

// sign signs r with the witness's key.
func (r *Receipt) sign(key ed25519.PrivateKey) {
	r.Witness = audit.KeyFingerprint(key.Public().(ed25519.PublicKey))
	r.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, r.SignedText()))
}

// fileName is the name of a log's receipts in a witness's directory: the
// hex of its fingerprint, nothing a client can choose.
func fileName(log string) string {
	h := sha256.Sum256([]byte(log))
	return hex.EncodeToString(h[:]) + ".jsonl"
}

// ParsePublicKey reads a public key as robotsgate prints them (base64 of
// the 32 bytes of an Ed25519 key): the witness's, or an evidence key.
func ParsePublicKey(text string) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%q is not a base64 Ed25519 public key", text)
	}
	return ed25519.PublicKey(raw), nil
}
