package compliance

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// A checkpoint that verifies vouches for every line before it (the chain
// links them), so a forger without the key can change lines only after
// the last checkpoint he keeps. The writers promise how often they sign
// (audit.Checkpoint.Interval): no more records than the interval after a
// checkpoint, and none that arrived later than its time after it, come
// before the next. A log whose checkpoints were removed breaks that
// promise where they were; one that ends with more than an interval's
// lines after its last checkpoint lost the checkpoints of its end.

// clockSlack is how much later than its checkpoint's interval allows a
// record may say it arrived: writers decide by the same clock the records
// are stamped with, so only the rounding of its reading.
const clockSlack = time.Second

// coverPoint is a checkpoint that covers the lines before it.
type coverPoint struct {
	place    string
	time     time.Time
	interval audit.Interval
}

// run is the records after a checkpoint that covers lines, up to the
// next one.
type run struct {
	n    int64
	file string
	line int
	// first and last are their earliest and latest times (to the
	// second), timed whether any had one.
	first, last second
	timed       bool
}

func (u *run) add(file string, n int, t second, ok bool) {
	if u.n == 0 {
		u.file, u.line = file, n
	}
	u.n++
	switch {
	case !ok:
	case !u.timed:
		u.first, u.last, u.timed = t, t, true
	case bytes.Compare(t[:], u.first[:]) < 0:
		u.first = t
	case bytes.Compare(t[:], u.last[:]) > 0:
		u.last = t
	}
}

// times returns the run's earliest and latest times (zero if none).
func (u *run) times() (first, last time.Time) {
	if !u.timed {
		return time.Time{}, time.Time{}
	}
	return u.first.time(), u.last.time()
}

// covered closes the run of records before checkpoint cp (at place),
// which must be no more than the checkpoint before them promised, and
// starts the next run at cp.
func (c *chainCheck) covered(cp *audit.Checkpoint, place string) {
	c.checkRun("the checkpoint at " + place)
	iv, ok := cp.Interval()
	if !ok {
		iv = audit.Interval{Records: c.o.Interval.Records}
	}
	c.cover, c.run = &coverPoint{place: place, time: cp.Time, interval: iv}, run{}
	c.r.LastCheckpoint, c.r.LastCheckpointTime, c.r.Unsigned = place, cp.Time, 0
}

// checkRun checks the run of records after the last covering checkpoint
// against the interval it promised; the records before the first are
// covered by its signature whatever their number. until says what ends
// the run.
func (c *chainCheck) checkRun(until string) {
	p, u := c.cover, &c.run
	if p == nil || u.n == 0 {
		return
	}
	iv := p.interval
	unseen := ""
	if c.o.Witness != nil {
		unseen = " that the witness saw no checkpoint of"
	}
	var what string
	switch {
	case iv.Records > 0 && u.n > iv.Records:
		what = fmt.Sprintf("%d records%s between the checkpoint at %s and %s, more than the %d it promised",
			u.n, unseen, p.place, until, iv.Records)
	case iv.Every > 0 && u.timed && u.last.time().After(p.time.Add(iv.Every+clockSlack)):
		what = fmt.Sprintf("a record of %s%s between the checkpoint at %s (%s) and %s, later than the %s it promised",
			u.last.time().Format(time.RFC3339), unseen, p.place, p.time.UTC().Format(time.RFC3339), until, iv.Every)
	default:
		return
	}
	why := ": checkpoints were removed"
	if c.o.Witness != nil {
		why = ": checkpoints were removed, or the witness did not see them"
	}
	c.r.Gaps = append(c.r.Gaps, ChainPlace{u.file, u.line, what + why})
}

// end checks the lines after the last covering checkpoint, and what the
// witness saw that the log lacks.
func (c *chainCheck) end() {
	if c.o.Key == nil {
		return
	}
	if c.cover == nil {
		if c.r.Records > 0 {
			why := "no checkpoint verifies with the key"
			if c.o.Witness != nil {
				why = "no checkpoint the witness saw verifies with the key"
			}
			c.r.Uncovered = append(c.r.Uncovered, ChainPlace{c.run.file, c.run.line, fmt.Sprintf("%d %s: %s, nothing vouches for them",
				c.r.Records, plural(int(c.r.Records), "record", "records"), why)})
		}
	} else {
		c.checkRun("the end of the log")
		c.r.Tail = c.cover.interval
		c.r.UnsignedFrom, c.r.UnsignedTo = c.run.times()
	}
	if w := c.o.Witness; w != nil {
		c.r.WitnessMissing, c.r.WitnessBefore = w.missing(c.found, c.r.Start != "", c.firstTime)
	}
}

// Witnessed is what a witness saw of one log: the checkpoints of its
// receipts (their signatures checked by whoever adds them), for
// ChainOptions.Witness. Memory: about 150 bytes a checkpoint.
type Witnessed struct {
	checkpoints map[string]*witnessedCheckpoint // by head and time
}

type witnessedCheckpoint struct {
	head string
	time time.Time
}

// NewWitnessed returns an empty Witnessed.
func NewWitnessed() *Witnessed {
	return &Witnessed{checkpoints: map[string]*witnessedCheckpoint{}}
}

// Add notes that the witness saw the checkpoint of head signed at t.
func (w *Witnessed) Add(head string, t time.Time) {
	w.checkpoints[witnessKey(head, t)] = &witnessedCheckpoint{head: head, time: t}
}

// Len is how many checkpoints the witness saw.
func (w *Witnessed) Len() int { return len(w.checkpoints) }

func witnessKey(head string, t time.Time) string {
	return head + " " + t.UTC().Format(time.RFC3339Nano)
}

// saw reports whether the witness saw cp, and notes in found (by key)
// that the log holds it.
func (w *Witnessed) saw(cp *audit.Checkpoint, found map[string]bool) bool {
	k := witnessKey(cp.Head, cp.Time)
	_, ok := w.checkpoints[k]
	if ok {
		found[k] = true
	}
	return ok
}

// missing lists the checkpoints the witness saw that the log does not
// hold (found lacks), oldest first; when the log's start was not read
// (startNotRead), those older than first (the first time read) are
// counted apart, as belonging to files not read.
func (w *Witnessed) missing(found map[string]bool, startNotRead bool, first time.Time) ([]string, int) {
	var out []*witnessedCheckpoint
	before := 0
	for k, s := range w.checkpoints {
		switch {
		case found[k]:
		case startNotRead && (first.IsZero() || s.time.Before(first)):
			before++
		default:
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *witnessedCheckpoint) int { return a.time.Compare(b.time) })
	lines := make([]string, len(out))
	for i, s := range out {
		lines[i] = fmt.Sprintf("the witness saw a checkpoint signed at %s of head %s that the log does not hold",
			s.time.UTC().Format(time.RFC3339Nano), s.head)
	}
	return lines, before
}

// Accept is what a reviewer accepts of logs that are not evidence of
// their whole history: Partial, a first file continuing a file not read
// (rotated logs whose predecessors are gone); Legacy, lines without a
// link (written before robotsgate chained its logs).
type Accept struct {
	Partial, Legacy bool
}

// Failures says why the logs are not evidence that every line is as it
// was written, nil when they are: the chain is whole; it starts in the
// files read (or a is Partial); every line has a link (or a is Legacy);
// a key verified the checkpoints and every record is covered by one that
// verifies (and that the witness saw, when one was checked), but for the
// lines after the last, no more than the interval it promised (what a
// crash leaves); and the witness saw nothing the log lacks. verify and
// report decide by it alone.
func (r *ChainResult) Failures(a Accept) []string {
	var out []string
	if n := len(r.Breaks); n > 0 {
		out = append(out, "the chain breaks "+times(n))
	}
	if n := len(r.BadCheckpoints); n > 0 {
		out = append(out, fmt.Sprintf("%d %s not verify", n, plural(n, "checkpoint does", "checkpoints do")))
	}
	if r.Start != "" && !a.Partial {
		out = append(out, "the first line read links to a line before it: lines were cut from its start, "+
			"or a rotated file before it was not read (-partial accepts that)")
	}
	if r.Unlinked > 0 && !a.Legacy {
		what := fmt.Sprintf("%d %s no link to the line before", r.Unlinked, plural(int(r.Unlinked), "line carries", "lines carry"))
		if r.Chained == 0 {
			what = "no hash chain: " + what
		}
		out = append(out, what+" (-legacy accepts lines written before robotsgate chained its logs)")
	}
	if r.Chained == 0 {
		return out // nothing signed: accepted as legacy, or failed above
	}
	if r.Key == "" {
		return append(out, "not verified: no evidence key to check the checkpoints with (-key KEY, as robotsgate evidence-key prints it)")
	}
	for _, list := range [][]ChainPlace{r.Uncovered, r.Gaps} {
		for _, p := range list {
			out = append(out, p.String())
		}
	}
	if n := len(r.WitnessMissing); n > 0 {
		out = append(out, fmt.Sprintf("the witness saw %d %s that the log does not hold: it was rewritten or cut",
			n, plural(n, "checkpoint", "checkpoints")))
	}
	if r.WitnessBefore > 0 && !a.Partial {
		out = append(out, fmt.Sprintf("the witness saw %d %s older than the first line read (-partial accepts a rotated log whose predecessors are gone)",
			r.WitnessBefore, plural(r.WitnessBefore, "checkpoint", "checkpoints")))
	}
	return out
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
