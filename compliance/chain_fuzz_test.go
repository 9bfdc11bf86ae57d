package compliance

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// No audit file, whatever its lines (links, checkpoints, times), panics
// the chain check or its verdict, with or without a key and a witness;
// and a file the check finds no fault with is one whose records a
// checkpoint that verifies covers, for the key, since a forger cannot
// sign one.
func FuzzCheckChain(f *testing.F) {
	key := newKey(f)
	pub := key.Public().(ed25519.PublicKey)
	clean, _ := os.ReadFile(writeChained(f, f.TempDir(), key, 6))
	f.Add(clean)
	f.Add([]byte(`{"prev_sha256":"` + "0123456789012345678901234567890123456789012345678901234567890123" + `","time":"2026-13-45T99:99:99+25:00"}` + "\n"))
	f.Add([]byte(`{"prev_sha256":"","checkpoint":{"time":"x","records":-1,"every_records":-5,"every_ms":1e30}}` + "\n{}\n"))
	f.Add([]byte(`{"prev_sha256":"","time":"2026-03-01T12:00:00Z"` + "\n" + `{"time":"2026-03-01T12:00:00.5+01:00"}` + "\n"))
	w := NewWitnessed()
	w.Add("", time.Unix(0, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "audit.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, o := range []ChainOptions{{}, {Key: pub}, {Key: pub, Witness: w}} {
			r, err := CheckChain([]string{path}, o)
			if err != nil {
				t.Fatal(err)
			}
			f := r.Failures(Accept{})
			r.Failures(Accept{Partial: true, Legacy: true})
			if o.Key != nil && f == nil && r.Records > 0 && r.LastCheckpoint == "" {
				t.Errorf("%d records, no checkpoint covering them, and no failure", r.Records)
			}
		}
	})
}
