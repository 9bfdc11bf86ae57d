package compliance

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
)

// relinkLines recomputes every line's link from the line before it, as a
// forger without the key does after an edit, and keeps the new head
// beside the log, so that neither the chain nor the head shows the edit.
func relinkLines(t *testing.T, path string, lines []string) {
	t.Helper()
	prev := ""
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, `{"prev_sha256":"`)
		if !ok {
			t.Fatalf("not a chained line: %s", l)
		}
		if j := strings.IndexByte(rest, '"'); j >= 0 {
			rest = rest[j:]
		}
		lines[i] = `{"prev_sha256":"` + prev + rest
		prev = auditlog.LineHash([]byte(lines[i]))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".head", []byte(prev+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
}

func readLogLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func isCheckpoint(l string) bool { return strings.Contains(l, `"checkpoint":{`) }

// clock is a writer's clock the test moves.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// writeTimed writes records at the times given (from t0, by the clock the
// writer reads too), with the writer's default 10,000 records and
// CheckpointEvery every, and closes the log unless crash.
func writeTimed(t *testing.T, key ed25519.PrivateKey, every time.Duration, offsets []time.Duration, crash bool) string {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := &clock{now: t0}
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := auditlog.Open(path, auditlog.Options{Key: key, CheckpointEvery: every, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i, off := range offsets {
		c.now = t0.Add(off)
		if err := w.Write(&audit.Record{Time: c.now, URL: fmt.Sprintf("http://a.example/%d", i), Decision: audit.Allow}); err != nil {
			t.Fatal(err)
		}
		w.Flush() // written at c.now, before the clock moves on
	}
	if !crash {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// With the key known, only checkpoints prove the log: a forger who edits
// a record, drops the checkpoints he cannot sign again and recomputes the
// chain and the head leaves a chain without a break, which is not
// evidence, for each way of doing it; what a crash leaves after the last
// checkpoint is, within the interval it promised; -legacy accepts a log
// without a chain, and nothing is accepted without a key.
func TestOnlyCheckpointsProveTheLog(t *testing.T) {
	key := newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	minute := time.Minute
	each := func(n int, step time.Duration) []time.Duration {
		var out []time.Duration
		for i := range n {
			out = append(out, time.Duration(i)*step)
		}
		return out
	}
	for _, c := range []struct {
		name   string
		log    func(t *testing.T) string
		o      ChainOptions
		accept Accept
		want   string // in the failures; "" for none
	}{
		{"as written", func(t *testing.T) string { return writeChained(t, t.TempDir(), key, 10) }, ChainOptions{Key: pub}, Accept{}, ""},
		{"every checkpoint dropped, an edit, the chain recomputed", func(t *testing.T) string {
			path := writeChained(t, t.TempDir(), key, 10)
			var keep []string
			for _, l := range readLogLines(t, path) {
				if !isCheckpoint(l) {
					keep = append(keep, strings.Replace(l, "/3", "/private", 1))
				}
			}
			relinkLines(t, path, keep)
			return path
		}, ChainOptions{Key: pub}, Accept{}, "10 records: no checkpoint verifies with the key"},
		{"the checkpoints after the first dropped: more records than it promised", func(t *testing.T) string {
			path := writeChained(t, t.TempDir(), key, 10)
			lines := readLogLines(t, path)
			keep := []string{lines[0]}
			for _, l := range lines[1:] {
				if !isCheckpoint(l) {
					keep = append(keep, l)
				}
			}
			relinkLines(t, path, keep)
			return path
		}, ChainOptions{Key: pub}, Accept{}, "10 records between the checkpoint at"},
		{"a crash: the lines after the last checkpoint, within its interval", func(t *testing.T) string {
			path, _ := writeUnclosed(t, t.TempDir(), key, 10)
			return path
		}, ChainOptions{Key: pub}, Accept{}, ""},
		{"the last checkpoints dropped: records later than the interval promised", func(t *testing.T) string {
			// Records every 20 s, a checkpoint a minute: dropping those
			// after the first leaves 9 records, fewer than 10,000, but the
			// last of them 3 minutes after the one that remains.
			path := writeTimed(t, key, minute, each(10, 20*time.Second), false)
			lines := readLogLines(t, path)
			keep := []string{lines[0]}
			for _, l := range lines[1:] {
				if !isCheckpoint(l) {
					keep = append(keep, l)
				}
			}
			relinkLines(t, path, keep)
			return path
		}, ChainOptions{Key: pub}, Accept{}, "later than the 1m0s it promised"},
		{"records 90 s apart, a crash: within the interval", func(t *testing.T) string {
			// A checkpoint precedes each record, the last one's covers all
			// but the last record.
			return writeTimed(t, key, minute, each(10, 90*time.Second), true)
		}, ChainOptions{Key: pub}, Accept{}, ""},
		{"no link on any line", func(t *testing.T) string {
			path := writeChained(t, t.TempDir(), key, 4)
			var out []string
			for _, l := range readLogLines(t, path) {
				var m map[string]json.RawMessage
				json.Unmarshal([]byte(l), &m)
				if m["checkpoint"] != nil {
					continue
				}
				delete(m, "prev_sha256")
				b, _ := json.Marshal(m)
				out = append(out, string(b))
			}
			os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o640)
			os.Remove(path + ".head")
			return path
		}, ChainOptions{Key: pub}, Accept{}, "no hash chain: 4 lines carry no link"},
		{"no link on any line, -legacy", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "audit.log")
			os.WriteFile(path, []byte(`{"time":"2026-03-01T12:00:00Z","url":"http://a/"}`+"\n"), 0o640)
			return path
		}, ChainOptions{Key: pub}, Accept{Legacy: true}, ""},
		{"no key", func(t *testing.T) string { return writeChained(t, t.TempDir(), key, 10) }, ChainOptions{}, Accept{}, "not verified: no evidence key"},
		{"another key", func(t *testing.T) string { return writeChained(t, t.TempDir(), key, 10) },
			ChainOptions{Key: newKey(t).Public().(ed25519.PublicKey)}, Accept{}, "4 checkpoints do not verify"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := CheckChain([]string{c.log(t)}, c.o)
			if err != nil {
				t.Fatal(err)
			}
			f := r.Failures(c.accept)
			switch {
			case c.want == "" && f != nil:
				t.Errorf("failures %q, want none", f)
			case c.want != "" && !strings.Contains(strings.Join(f, "\n"), c.want):
				t.Errorf("failures %q, want one saying %q", f, c.want)
			}
		})
	}
}

// What a crash leaves is named: how many lines, from when to when, after
// which checkpoint, and the interval it promised.
func TestTheLinesAfterTheLastCheckpointAreNamed(t *testing.T) {
	key := newKey(t)
	path := writeTimed(t, key, time.Minute, []time.Duration{0, 10 * time.Second, 70 * time.Second, 80 * time.Second}, true)
	// cp 1, record 2, record 3, cp 4 (a minute on), record 5, record 6.
	r, err := CheckChain([]string{path}, ChainOptions{Key: key.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if r.LastCheckpoint != path+":4" || !r.LastCheckpointTime.Equal(t0.Add(70*time.Second)) || r.Unsigned != 2 ||
		!r.UnsignedFrom.Equal(t0.Add(70*time.Second)) || !r.UnsignedTo.Equal(t0.Add(80*time.Second)) ||
		r.Tail != (audit.Interval{Records: 10000, Every: time.Minute}) || r.Failures(Accept{}) != nil {
		t.Errorf("last %s at %s, %d unsigned from %s to %s, tail %+v, failures %q", r.LastCheckpoint, r.LastCheckpointTime,
			r.Unsigned, r.UnsignedFrom, r.UnsignedTo, r.Tail, r.Failures(Accept{}))
	}
}

// With a witness, only the checkpoints it saw cover records, and every
// checkpoint it saw must be in the log: a log the key holder rewrote and
// signed again verifies with the key, but not against the witness.
func TestWitnessCatchesTheKeyHolder(t *testing.T) {
	key := newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	seen := NewWitnessed()
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := auditlog.Open(path, auditlog.Options{Key: key, CheckpointRecords: 4, OnCheckpoint: func(c audit.Checkpoint) { seen.Add(c.Head, c.Time) }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		w.Write(&audit.Record{URL: fmt.Sprintf("http://a.example/%d", i), Decision: audit.Allow})
	}
	w.Close()
	r, _ := CheckChain([]string{path}, ChainOptions{Key: pub, Witness: seen})
	if f := r.Failures(Accept{}); f != nil || r.Witnessed != 4 {
		t.Fatalf("as written: witnessed %d, failures %q", r.Witnessed, f)
	}

	// The key holder edits a record and signs every checkpoint again, at
	// their own times.
	var lines []string
	prev := ""
	for _, l := range readLogLines(t, path) {
		var m struct {
			Checkpoint *audit.Checkpoint `json:"checkpoint"`
		}
		json.Unmarshal([]byte(l), &m)
		if m.Checkpoint != nil {
			obj, _ := auditlog.CheckpointObject(key, prev, m.Checkpoint.Records, m.Checkpoint.Time, audit.Interval{Records: 4, Every: time.Minute})
			l = string(auditlog.ChainLine(prev, obj))
			l = strings.TrimSuffix(l, "\n")
		} else {
			l = strings.Replace(l, "/5", "/private", 1)
			l = `{"prev_sha256":"` + prev + l[strings.IndexByte(l[16:], '"')+16:]
		}
		lines = append(lines, l)
		prev = auditlog.LineHash([]byte(l))
	}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o640)
	os.WriteFile(path+".head", []byte(prev+"\n"), 0o640)

	r, _ = CheckChain([]string{path}, ChainOptions{Key: pub})
	if f := r.Failures(Accept{}); f != nil {
		t.Fatalf("the key holder's log fails without the witness: %q (the test's forgery is wrong)", f)
	}
	r, _ = CheckChain([]string{path}, ChainOptions{Key: pub, Witness: seen})
	f := strings.Join(r.Failures(Accept{}), "\n")
	if !strings.Contains(f, "the witness saw 2 checkpoints that the log does not hold") ||
		!strings.Contains(f, "that the witness saw no checkpoint of") {
		t.Errorf("against the witness: %s", f)
	}
}
