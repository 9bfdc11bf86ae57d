package auditlog

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
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// The audit log is a hash chain: every line carries, as prev_sha256, the
// SHA-256 of the line before it (LineHash), the first line of a file that
// of the last line of the file before it, so that a line deleted,
// inserted, reordered or edited after it was written breaks the chain
// where it happened. At intervals a checkpoint line signs the chain's head
// with the evidence key (Ed25519), which vouches for every line before it
// to whoever holds the public key.

// sign signs c with key.
func sign(c *audit.Checkpoint, key ed25519.PrivateKey) {
	c.Key = audit.KeyFingerprint(key.Public().(ed25519.PublicKey))
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, c.SignedText()))
}

// LineHash is the chain's hash of one line, without its newline (hex).
func LineHash(line []byte) string {
	h := sha256.Sum256(line)
	return hex.EncodeToString(h[:])
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
func CheckpointObject(key ed25519.PrivateKey, head string, records int64, at time.Time, iv audit.Interval) ([]byte, error) {
	_, obj, err := newCheckpoint(key, head, records, at, iv)
	return obj, err
}

// newCheckpoint signs a checkpoint and returns it with its JSON object.
func newCheckpoint(key ed25519.PrivateKey, head string, records int64, at time.Time, iv audit.Interval) (*audit.Checkpoint, []byte, error) {
	c := &audit.Checkpoint{Time: at.UTC(), Records: records, Head: head, EveryRecords: iv.Records, EveryMS: iv.Every.Milliseconds()}
	sign(c, key)
	obj, err := json.Marshal(struct {
		Checkpoint *audit.Checkpoint `json:"checkpoint"`
	}{c})
	return c, obj, err
}
