package auditlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/robotsgate/robotsgate/audit"
)

// checkChain fails unless every line of the log at path names the hash
// of the line before it, and returns the records (checkpoints apart) and
// the checkpoints.
func checkChain(t *testing.T, path string) (records []audit.Record, checkpoints int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		want := fmt.Sprintf(`{"prev_sha256":%q`, prev)
		if !strings.HasPrefix(line, want) {
			t.Fatalf("line %d does not follow the one before: %.90s", i+1, line)
		}
		prev = LineHash([]byte(line))
	}
	for _, r := range readLines(t, path) {
		if r.Checkpoint != nil {
			checkpoints++
			continue
		}
		records = append(records, r)
	}
	return records, checkpoints
}

// writeFrom starts goroutines goroutines on wg, each writing each records
// with URLs distinct across all of them.
func writeFrom(t *testing.T, wg *sync.WaitGroup, w *Writer, goroutines, each int) {
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if err := w.Write(&audit.Record{URL: fmt.Sprintf("http://a.example/%d/%d", g, i), Decision: audit.Allow}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
}

// Close writes every record handed over before it, from many goroutines
// at once, chained in the order they were taken, then its last
// checkpoint: a clean stop loses nothing. A Write after Close is refused.
func TestCloseWritesEveryRecordHandedOver(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	path := filepath.Join(t.TempDir(), "audit.log")
	// A small MaxQueue makes writers wait for room, as under a burst.
	w, err := Open(path, Options{Key: key, CheckpointRecords: 1000, MaxQueue: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	writeFrom(t, &wg, w, goroutines, each)
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&audit.Record{Decision: audit.Allow}); !errors.Is(err, errClosed) {
		t.Errorf("a Write after Close: %v, want refused", err)
	}
	records, checkpoints := checkChain(t, path)
	seen := map[string]bool{}
	for _, r := range records {
		seen[r.URL] = true
	}
	// Opened, and after every 1,000 records (the 4,000th's is the last:
	// Close has no record to cover).
	if len(records) != goroutines*each || len(seen) != goroutines*each || checkpoints != 5 {
		t.Errorf("%d records (%d distinct), %d checkpoints; want %d records, 5 checkpoints",
			len(records), len(seen), checkpoints, goroutines*each)
	}
}

// Flush returns once what was handed over before it is in the file, so
// that a reader who waits for it reads it.
func TestFlushWritesWhatWasHandedOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 100 {
		w.Write(&audit.Record{URL: fmt.Sprintf("http://a.example/%d", i), Decision: audit.Allow})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if records, _ := checkChain(t, path); len(records) != i+1 {
			t.Fatalf("after Flush of record %d: %d in the file", i+1, len(records))
		}
	}
}

// A Reopen (SIGHUP, logrotate) while records are being written keeps the
// chain whole: each line after it names the hash of the line before it,
// whichever of the two came first. Regression: Reopen read the file's
// last line before it took the writer's lock, so a batch written in
// between was forgotten and the next line chained to the one before it.
func TestReopenWhileWritingKeepsTheChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each, reopens = 4, 2000, 2000
	var wg sync.WaitGroup
	writeFrom(t, &wg, w, goroutines, each)
	wg.Go(func() {
		for range reopens {
			if err := w.Reopen(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if records, _ := checkChain(t, path); len(records) != goroutines*each {
		t.Errorf("%d records, want %d", len(records), goroutines*each)
	}
}
