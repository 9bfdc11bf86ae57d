package auditlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// A log opened with a key starts with a checkpoint; a record written a
// checkpoint interval after the last checkpoint follows a new one; each
// checkpoint states the interval under its signature (changing it breaks
// the signature) and is handed to OnCheckpoint.
func TestCheckpointsComeWhenOpenedAndBeforeALateRecord(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	pub := key.Public().(ed25519.PublicKey)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	var seen []audit.Checkpoint
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := Open(path, Options{Key: key, CheckpointEvery: time.Minute, CheckpointRecords: 100,
		Now: func() time.Time { return now }, OnCheckpoint: func(c audit.Checkpoint) { seen = append(seen, c) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{time.Second, 30 * time.Second, 90 * time.Second} {
		now = t0.Add(at)
		if err := w.Write(&audit.Record{Time: now, URL: "http://a.example/", Decision: audit.Allow}); err != nil {
			t.Fatal(err)
		}
		w.Flush() // written at now, before the clock moves on
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	kinds := ""
	for _, l := range lines {
		if strings.Contains(l, `"checkpoint":{`) {
			kinds += "C"
		} else {
			kinds += "r"
		}
	}
	if kinds != "CrrCr" || len(seen) != 2 || !seen[1].Time.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("lines %s (want CrrCr), checkpoints handed over %d", kinds, len(seen))
	}
	var l struct{ Checkpoint *audit.Checkpoint }
	json.Unmarshal([]byte(lines[3]), &l)
	c := l.Checkpoint
	if iv, ok := c.Interval(); !ok || iv != (audit.Interval{Records: 100, Every: time.Minute}) || !c.Verify(pub) || c.Head != LineHash([]byte(lines[2])) {
		t.Errorf("checkpoint %+v: interval %v %v, verifies %v", c, iv, ok, c.Verify(pub))
	}
	c.EveryRecords = 1000000
	if c.Verify(pub) {
		t.Error("a checkpoint whose interval was changed still verifies")
	}
	c.EveryRecords, c.EveryMS = 0, 0
	if c.Verify(pub) {
		t.Error("a checkpoint stripped of its interval (as v1) still verifies")
	}
}
