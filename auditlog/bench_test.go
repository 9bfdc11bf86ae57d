package auditlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// benchRecord is a typical record: an allowed GET with the robots.txt
// fields filled (about 600 bytes as a line).
func benchRecord(i int) *audit.Record {
	return &audit.Record{
		Time: time.Date(2026, 11, 26, 12, 0, 0, i, time.UTC), Client: "127.0.0.1:51234", Mode: "enforce",
		UserAgent: "Mozilla/5.0 (compatible; ExampleBot/2.1; +https://example.com/bot)", Agent: "ExampleBot",
		Group: "*", Method: "GET", Via: "proxy", URL: "https://www.example.com/articles/" + strconv.Itoa(i) + "?page=2",
		Decision: audit.Allow, Enforced: true, RobotsStatus: "ok", RobotsURL: "https://www.example.com/robots.txt",
		RobotsSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", WaitMS: 1000.2,
		UpstreamStatus: 200, Status: 200, Bytes: 48213, DurationMS: 1093.7,
	}
}

// BenchmarkWrite is the cost of one record written to a file: chained,
// with a checkpoint signed every 10,000 records (the default), so that
// the checkpoints' share is in the figure. The same benchmark at the
// commit before the chain, impl=unchained, is its baseline
// (docs/benchmarks.md).
func BenchmarkWrite(b *testing.B) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("impl=chained", func(b *testing.B) {
		w, err := Open(filepath.Join(b.TempDir(), "audit.log"), Options{Key: key})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := w.Write(benchRecord(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCheckpoint is the cost of one checkpoint: a record followed
// by a checkpoint (signing the head, writing the line and the head file).
func BenchmarkCheckpoint(b *testing.B) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	w, err := Open(filepath.Join(b.TempDir(), "audit.log"), Options{Key: key, CheckpointRecords: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := w.Write(benchRecord(i)); err != nil {
			b.Fatal(err)
		}
	}
}
