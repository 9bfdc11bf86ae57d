package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"time"
)

// A checkpoint line of the audit log (Record.Checkpoint) signs the hash
// chain's head with the evidence key; the writer that chains and signs is
// package auditlog's. What a checkpoint says, what its signature covers
// and how a reader checks it are here, with the records they vouch for.

// Checkpoint is a signed statement of the chain's head: the line it is in
// has prev_sha256 Head, the hash of the last line before it.
type Checkpoint struct {
	// Time is when it was written (RFC 3339, UTC).
	Time time.Time `json:"time"`
	// Records counts the records the writer wrote since it opened the log
	// (checkpoints not counted).
	Records int64 `json:"records"`
	// Head is the SHA-256 of the line before it (hex).
	Head string `json:"head"`
	// Key is the fingerprint of the public key that signs (KeyFingerprint).
	Key string `json:"key"`
	// Signature is the Ed25519 signature of SignedText, base64.
	Signature string `json:"signature"`
	// EveryRecords and EveryMS are the writer's promise, signed with the
	// rest: the next checkpoint follows within EveryRecords lines, and
	// before the first line written EveryMS milliseconds or more after
	// this one (0: no time bound), so that the lines a verifier finds
	// after a checkpoint with no checkpoint after them can be no more than
	// one interval's (what a crash leaves), and lines dropped with the
	// checkpoints that covered them show. Both 0 in checkpoints written
	// before the writers promised (v1).
	EveryRecords int64 `json:"every_records,omitempty"`
	EveryMS      int64 `json:"every_ms,omitempty"`
}

// Interval is how often a writer writes checkpoints (Checkpoint's
// promise).
type Interval struct {
	// Records: a checkpoint follows at the latest this many lines after
	// the last one.
	Records int64
	// Every: a checkpoint is written before the first line written this
	// long or longer after the last one; 0 for none (the archive's fetch
	// logs).
	Every time.Duration
}

// Interval returns the interval the checkpoint promises; ok is false for
// a checkpoint that promises none (v1).
func (c *Checkpoint) Interval() (iv Interval, ok bool) {
	if c.EveryRecords <= 0 {
		return Interval{}, false
	}
	return Interval{Records: c.EveryRecords, Every: time.Duration(c.EveryMS) * time.Millisecond}, true
}

// SignedText is what a checkpoint's signature covers: its head, time and
// count (and the interval it promises), with a context string so that the
// signature means nothing else.
func (c *Checkpoint) SignedText() []byte {
	text := c.Head + "\n" + c.Time.UTC().Format(time.RFC3339Nano) + "\n" + strconv.FormatInt(c.Records, 10) + "\n"
	if c.EveryRecords == 0 && c.EveryMS == 0 {
		return []byte("robotsgate audit checkpoint v1\n" + text)
	}
	return []byte("robotsgate audit checkpoint v2\n" + text + strconv.FormatInt(c.EveryRecords, 10) + "\n" +
		strconv.FormatInt(c.EveryMS, 10) + "\n")
}

// Verify reports whether the checkpoint is signed by pub.
func (c *Checkpoint) Verify(pub ed25519.PublicKey) bool {
	sig, err := base64.StdEncoding.DecodeString(c.Signature)
	return err == nil && len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, c.SignedText(), sig)
}

// KeyFingerprint names a public key: "sha256:" and the hex SHA-256 of its
// 32 bytes.
func KeyFingerprint(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return "sha256:" + hex.EncodeToString(h[:])
}
