package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The audit log is a hash chain: every line carries, as prev_sha256, the
// SHA-256 of the line before it (LineHash), the first line of a file that
// of the last line of the file before it, so that a line deleted,
// inserted, reordered or edited after it was written breaks the chain
// where it happened. At intervals a checkpoint line signs the chain's head
// with the evidence key (Ed25519), which vouches for every line before it
// to whoever holds the public key.

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

// sign signs c with key.
func (c *Checkpoint) sign(key ed25519.PrivateKey) {
	c.Key = KeyFingerprint(key.Public().(ed25519.PublicKey))
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, c.SignedText()))
}

// LineHash is the chain's hash of one line, without its newline (hex).
func LineHash(line []byte) string {
	h := sha256.Sum256(line)
	return hex.EncodeToString(h[:])
}

// KeyFingerprint names a public key: "sha256:" and the hex SHA-256 of its
// 32 bytes.
func KeyFingerprint(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return "sha256:" + hex.EncodeToString(h[:])
}

// LoadOrCreateKey reads the evidence key at path (PKCS #8 PEM), or creates
// it, with mode 0600 in a directory created with 0700, when there is
// none; created says which.
func LoadOrCreateKey(path string) (key ed25519.PrivateKey, created bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("evidence key: %w", err)
	}
	key, err = ParseKey(data)
	if err != nil {
		return nil, false, fmt.Errorf("evidence key %s: %w", path, err)
	}
	return key, false, nil
}

// ParseKey reads an evidence key (PKCS #8 PEM of an Ed25519 key).
func ParseKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM PRIVATE KEY")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("not an Ed25519 key")
	}
	return key, nil
}

func createKey(path string) (ed25519.PrivateKey, bool, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("evidence key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, false, fmt.Errorf("evidence key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("evidence key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("evidence key: %w", err)
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		os.Remove(path)
		return nil, false, fmt.Errorf("evidence key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, false, fmt.Errorf("evidence key: %w", err)
	}
	return key, true, nil
}

// ChainLine returns obj, a JSON object, as a line of a chain after the
// line of hash prev: `{"prev_sha256":"PREV",` then obj's fields, and a
// newline. Other chained logs (the archive's fetch logs) write their lines
// with it, so that one checker reads them all.
func ChainLine(prev string, obj []byte) []byte {
	line := make([]byte, 0, len(`{"prev_sha256":"",`)+len(prev)+len(obj)+1)
	line = append(append(append(line, `{"prev_sha256":"`...), prev...), '"')
	if rest := obj[1:]; len(rest) > 0 && rest[0] != '}' {
		line = append(line, ',')
	}
	return append(append(line, obj[1:]...), '\n')
}

// CheckpointObject is the JSON object of a checkpoint of head signed with
// key, promising iv, `{"checkpoint":{...}}`, for ChainLine.
func CheckpointObject(key ed25519.PrivateKey, head string, records int64, at time.Time, iv Interval) ([]byte, error) {
	_, obj, err := newCheckpoint(key, head, records, at, iv)
	return obj, err
}

// newCheckpoint signs a checkpoint and returns it with its JSON object.
func newCheckpoint(key ed25519.PrivateKey, head string, records int64, at time.Time, iv Interval) (*Checkpoint, []byte, error) {
	c := &Checkpoint{Time: at.UTC(), Records: records, Head: head, EveryRecords: iv.Records, EveryMS: iv.Every.Milliseconds()}
	c.sign(key)
	obj, err := json.Marshal(struct {
		Checkpoint *Checkpoint `json:"checkpoint"`
	}{c})
	return c, obj, err
}
