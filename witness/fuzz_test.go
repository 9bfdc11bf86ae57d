package witness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// No POST body panics the witness or makes it keep a receipt for a
// checkpoint its log's key did not sign, and no list of receipts panics
// their reader or passes one its key did not sign.
func FuzzWitness(f *testing.F) {
	logKey, wKey := newKeyTB(f), newKeyTB(f)
	good, _ := json.Marshal(checkpointTB(f, logKey, "", time.Now()))
	f.Add(good)
	f.Add([]byte(`{"key":"sha256:00","time":"2026-01-01T00:00:00Z","signature":"!!"}`))
	f.Add([]byte("{}\n\x00"))
	s, err := NewServer(ServerOptions{Dir: f.TempDir(), Key: wKey, Logs: []ed25519.PublicKey{logKey.Public().(ed25519.PublicKey)}})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/checkpoints", bytes.NewReader(body)))
		if rec.Code == http.StatusOK {
			var r Receipt
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || !r.Checkpoint.Verify(logKey.Public().(ed25519.PublicKey)) {
				t.Errorf("a receipt for a checkpoint the log's key did not sign: %s", rec.Body)
			}
		}
		ReadReceipts(bytes.NewReader(body), wKey.Public().(ed25519.PublicKey), "", func(r *Receipt) error {
			if r.Verify(wKey.Public().(ed25519.PublicKey), "") != nil {
				t.Errorf("a receipt passed that does not verify")
			}
			return nil
		})
	})
}
