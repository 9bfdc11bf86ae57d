package compliance

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
)

// writeChained writes n records through an auditlog.Writer signing with key,
// a checkpoint every 4 records, and returns the log's path.
func writeChained(t testing.TB, dir string, key ed25519.PrivateKey, n int) string {
	t.Helper()
	path, w := writeUnclosed(t, dir, key, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeUnclosed is writeChained without the Close, as a crash leaves it:
// no last checkpoint, the head kept beside the log that of the last
// checkpoint.
func writeUnclosed(t testing.TB, dir string, key ed25519.PrivateKey, n int) (string, *auditlog.Writer) {
	t.Helper()
	path := filepath.Join(dir, "audit.log")
	w, err := auditlog.Open(path, auditlog.Options{Key: key, CheckpointRecords: 4, CheckpointEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.Write(&audit.Record{URL: fmt.Sprintf("http://a.example/%d", i), Decision: audit.Allow}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil { // written, as a crash leaves what was
		t.Fatal(err)
	}
	return path, w
}

func newKey(t testing.TB) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rewrite applies edit to the log's lines (without their newlines).
func rewrite(t *testing.T, path string, edit func([]string) []string) {
	t.Helper()
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if err := os.WriteFile(path, []byte(strings.Join(edit(lines), "\n")+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
}

// A log as written is whole and every checkpoint verifies with the key;
// deleting, editing, inserting or moving a line breaks the chain at the
// line that follows it; a line cut by a crash is reported as torn, not as
// tampering; a checkpoint signed by another key is refused.
func TestChainShowsWhereALineWasTamperedWith(t *testing.T) {
	key := newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	// 10 records: checkpoints when opened, after records 4 and 8 and on
	// Close: cp 1, lines 2-5, cp 6, 7-10, cp 11, 12-13, cp 14.
	clean := writeChained(t, t.TempDir(), key, 10)
	r, err := CheckChain([]string{clean}, ChainOptions{Key: pub})
	if err != nil || !r.Whole() || r.Lines != 14 || r.Checkpoints != 4 || r.Unsigned != 0 || r.Start != "" || r.Failures(Accept{}) != nil {
		t.Fatalf("the log as written: %+v %v", r, err)
	}
	other := newKey(t).Public().(ed25519.PublicKey)
	if r, _ := CheckChain([]string{clean}, ChainOptions{Key: other}); len(r.BadCheckpoints) != 4 || !strings.Contains(r.BadCheckpoints[0].Why, "does not verify") {
		t.Errorf("checked with another key: %+v", r.BadCheckpoints)
	}
	for _, c := range []struct {
		name string
		edit func([]string) []string
		at   int // the line the break is reported at
	}{
		{"a line deleted", func(l []string) []string { return append(l[:2:2], l[3:]...) }, 3},
		{"a line edited", func(l []string) []string { l[7] = strings.Replace(l[7], "/5", "/private", 1); return l }, 9},
		{"a line inserted", func(l []string) []string { return append(append(l[:7:7], l[1]), l[7:]...) }, 8},
		{"two lines swapped", func(l []string) []string { l[1], l[2] = l[2], l[1]; return l }, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeChained(t, t.TempDir(), key, 10)
			rewrite(t, path, c.edit)
			r, err := CheckChain([]string{path}, ChainOptions{Key: pub})
			if err != nil || r.Whole() || len(r.Breaks) == 0 || r.Breaks[0].Line != c.at || !strings.Contains(r.Breaks[0].Why, "chain broken") {
				t.Errorf("breaks %v, want the first at line %d (%v)", r.Breaks, c.at, err)
			}
		})
	}
	t.Run("the last line cut by a crash", func(t *testing.T) {
		// Cp 1, lines 2-5, cp 6, 7-10, cp 11, 12, 13 half-written.
		path, _ := writeUnclosed(t, t.TempDir(), key, 10)
		data, _ := os.ReadFile(path)
		os.WriteFile(path, data[:len(data)-20], 0o640)
		r, err := CheckChain([]string{path}, ChainOptions{Key: pub})
		if err != nil || !r.Whole() || len(r.Torn) != 1 || r.Torn[0].Line != 13 || r.Unsigned != 2 || r.Failures(Accept{}) != nil {
			t.Errorf("torn %v, breaks %v, unsigned %d, failures %q (%v); want line 13 torn, 2 lines unsigned, no break",
				r.Torn, r.Breaks, r.Unsigned, r.Failures(Accept{}), err)
		}
	})
	for _, cut := range []int{1, 3} {
		t.Run(fmt.Sprintf("the last %d lines cut after a stop", cut), func(t *testing.T) {
			path := writeChained(t, t.TempDir(), key, 10)
			rewrite(t, path, func(l []string) []string { return l[:len(l)-cut] })
			r, err := CheckChain([]string{path}, ChainOptions{Key: pub})
			if want := 15 - cut; err != nil || r.Whole() || len(r.Breaks) != 1 || r.Breaks[0].Line != want ||
				!strings.Contains(r.Breaks[0].Why, "cut from its end") {
				t.Errorf("breaks %v (%v); want one at line %d saying lines were cut from the end", r.Breaks, err, want)
			}
		})
	}
}

// The chain goes on across a reopened file (logrotate renames it, SIGHUP
// reopens a new one) and across a restart on an empty file.
func TestChainGoesOnAcrossRotationAndRestart(t *testing.T) {
	key := newKey(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	w, err := auditlog.Open(path, auditlog.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&audit.Record{URL: "http://a/1"})
	os.Rename(path, path+".1")
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	w.Write(&audit.Record{URL: "http://a/2"})
	w.Close()
	os.Rename(path, path+".2")
	w, err = auditlog.Open(path, auditlog.Options{Key: key}) // a new process, an empty file
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&audit.Record{URL: "http://a/3"})
	w.Close()
	r, err := CheckChain([]string{path + ".1", path + ".2", path}, ChainOptions{Key: key.Public().(ed25519.PublicKey)})
	// cp, 1 | 2, cp | cp, 3, cp
	if err != nil || !r.Whole() || r.Chained != r.Lines || r.Lines != 7 || r.Failures(Accept{}) != nil {
		t.Errorf("rotated and restarted: %+v %v", r, err)
	}
}

// The archive's fetch logs are chained and signed as the audit log is;
// each file is a chain of its own, so cutting its first line breaks it too,
// and its head is kept beside it, so cutting its last lines does as well.
func TestFetchLogsAreChained(t *testing.T) {
	key := newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	dir := t.TempDir()
	w, err := archive.Open(dir, key, nil) // a full queue drops a record: retried below
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1500 {
		f := archive.Fetch{Origin: fmt.Sprintf("http://o%d.example", i), HTTPStatus: 200, Outcome: "ok"}
		for try := 0; !w.Record(f, nil); try++ {
			if try > 1e6 {
				t.Fatal("the archive's queue stays full")
			}
			runtime.Gosched()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := CheckFetchLogs(dir, ChainOptions{Key: pub})
	// A checkpoint when opened, after 1,000 lines and on Close.
	if err != nil || !r.Whole() || r.Lines != 1503 || r.Chained != 1503 || r.Checkpoints != 3 || r.Unsigned != 0 || r.Failures(Accept{}) != nil {
		t.Fatalf("the fetch log as written: %+v %v", r, err)
	}
	logs, _ := archive.FetchLogs(dir)
	for _, c := range []struct {
		name string
		edit func([]string) []string
		want string
	}{
		{"a line edited", func(l []string) []string { l[6] = strings.Replace(l[6], "o5.example", "o5.evil", 1); return l }, "chain broken"},
		{"the first line cut", func(l []string) []string { return l[1:] }, "lines cut from its start"},
		// The head kept beside the log names its last line, the final
		// checkpoint of the clean stop: cutting it, or it and the lines
		// before it, is seen (a crash's lines after the last kept head are
		// only as good as the disk, as in the audit log).
		{"the final checkpoint cut", func(l []string) []string { return l[:len(l)-1] }, "lines were cut from its end"},
		{"the last 300 lines cut", func(l []string) []string { return l[:len(l)-300] }, "lines were cut from its end"},
	} {
		data, _ := os.ReadFile(logs[0])
		rewrite(t, logs[0], c.edit)
		r, err := CheckFetchLogs(dir, ChainOptions{Key: pub})
		if err != nil || r.Whole() || len(r.Breaks) == 0 || !strings.Contains(r.Breaks[0].Why, c.want) {
			t.Errorf("%s: breaks %v (%v), want one saying %q", c.name, r.Breaks, err, c.want)
		}
		os.WriteFile(logs[0], data, 0o640)
	}
	if r, _ := CheckFetchLogs(dir, ChainOptions{Key: newKey(t).Public().(ed25519.PublicKey)}); len(r.BadCheckpoints) != 3 {
		t.Errorf("checked with another key: %v, want both checkpoints refused", r.BadCheckpoints)
	}
}
