package report

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/robotsgate/robotsgate/audit"
)

// The compliance figure of the politeness governor: an origin that
// answered 429 or 503 was paused (the audit record of that answer carries
// the pause, from when robotsgate received it until it ended), and no
// request to the origin may have left robotsgate in between. A request is
// taken when it left (the record's time plus sent_ms, or wait_ms in logs
// that lack it), as for the gaps: a request sent before the answer came,
// and so reaching the origin after it, is not counted.
//
// As for the gaps, records come out of order: each origin keeps a window
// of its last sends, sorted, and the pauses it has seen. A send is checked
// against the pauses known when it comes, a pause against the sends in the
// window; a pause older than a send the window dropped cannot be fully
// checked and is counted as unchecked. Memory per origin is bounded by
// the window and by the pauses still open at the time the log has
// reached.

// pauseAgg is an origin's pauses and the sends checked against them.
type pauseAgg struct {
	answers   int64 // answers that paused the origin
	statuses  map[int]int64
	spans     []pauseSpan  // merged, sorted, each [from, until)
	longest   int64        // the longest single pause, ns
	total     int64        // the paused time (the union), ns
	sends     []pausedSend // the last sends, sorted by time
	dropped   int64        // the latest send the window dropped
	during    int64        // sends that left during a pause: must be 0
	unchecked int64        // pauses older than a dropped send
	held      int64        // requests held for a pause (backoff_ms)
	heldMS    float64      // their total hold for it
	refused   int64        // origin-backoff refusals
	firstBad  *audit.Record
}

type pauseSpan struct{ from, until int64 }

type pausedSend struct {
	at      int64
	counted bool
}

// pauseRecord takes a record into its origin's pause figures.
func (p *pauseAgg) record(rec *audit.Record, paced bool) {
	switch {
	case rec.Decision == audit.OriginBackoff:
		p.refused++
	case rec.BackoffMS > 0:
		p.held++
		p.heldMS += rec.BackoffMS
	}
	if rec.Pause != nil {
		p.pause(rec.Pause)
	}
	if paced {
		p.send(rec, sendTime(rec))
	}
}

// sendTime is when a forwarded request left robotsgate, ns.
func sendTime(rec *audit.Record) int64 {
	ms := rec.SentMS
	if ms == 0 {
		ms = rec.WaitMS
	}
	return rec.Time.UnixNano() + int64(math.Round(ms*float64(time.Millisecond)))
}

// pause adds a pause and counts the window's sends it holds.
func (p *pauseAgg) pause(pa *audit.Pause) {
	if p.statuses == nil {
		p.statuses = map[int]int64{}
	}
	p.answers++
	p.statuses[pa.Status]++
	s := pauseSpan{pa.From.UnixNano(), pa.Until.UnixNano()}
	if s.until <= s.from {
		return
	}
	p.longest = max(p.longest, s.until-s.from)
	if s.from < p.dropped {
		p.unchecked++
	}
	for i := range p.sends {
		if q := &p.sends[i]; !q.counted && s.from < q.at && q.at < s.until {
			q.counted = true
			p.during++
		}
	}
	p.merge(s)
}

// merge adds s to the sorted, disjoint spans.
func (p *pauseAgg) merge(s pauseSpan) {
	i := sort.Search(len(p.spans), func(i int) bool { return p.spans[i].until >= s.from })
	j := i
	for j < len(p.spans) && p.spans[j].from <= s.until {
		s.from, s.until = min(s.from, p.spans[j].from), max(s.until, p.spans[j].until)
		j++
	}
	for _, old := range p.spans[i:j] {
		p.total -= old.until - old.from
	}
	p.total += s.until - s.from
	p.spans = slices.Replace(p.spans, i, j, s)
}

// inside reports whether at lies strictly within a known pause.
func (p *pauseAgg) inside(at int64) bool {
	i := sort.Search(len(p.spans), func(i int) bool { return p.spans[i].until > at })
	return i < len(p.spans) && p.spans[i].from < at
}

// send checks a send against the pauses known and keeps it in the window.
func (p *pauseAgg) send(rec *audit.Record, at int64) {
	q := pausedSend{at: at}
	if p.inside(at) {
		q.counted = true
		p.during++
		if p.firstBad == nil {
			r := *rec
			p.firstBad = &r
		}
	}
	i := sort.Search(len(p.sends), func(i int) bool { return p.sends[i].at > at })
	p.sends = slices.Insert(p.sends, i, q)
	if len(p.sends) > reorderWindow {
		p.dropped = p.sends[0].at
		p.sends = slices.Delete(p.sends, 0, 1)
	}
	p.forget(rec.Time.UnixNano())
}

// forget drops the pauses that ended before now, the arrival the log has
// reached, minus the window's reach: no later send can fall in them.
func (p *pauseAgg) forget(now int64) {
	if len(p.sends) == 0 || len(p.spans) < 64 {
		return
	}
	oldest := min(now, p.sends[0].at)
	i := sort.Search(len(p.spans), func(i int) bool { return p.spans[i].until >= oldest })
	p.spans = slices.Delete(p.spans, 0, i)
}

// BackoffFigures say how an origin asked to slow down (it answered 429 or
// 503) and what robotsgate did: the pauses it kept, the requests it held
// or refused for them, and the requests that left during one, which must
// be none.
type BackoffFigures struct {
	// Answers counts the answers that paused the origin, Statuses them by
	// status (0: the origin could not be reached).
	Answers  int64         `json:"answers"`
	Statuses map[int]int64 `json:"statuses,omitempty"`
	// PausedSeconds is how long the origin was paused in all (overlapping
	// pauses counted once), LongestPauseSeconds the longest pause.
	PausedSeconds       float64 `json:"paused_seconds"`
	LongestPauseSeconds float64 `json:"longest_pause_seconds"`
	// Held counts the requests held for a pause and HeldSeconds their
	// holds; Refused those refused (origin-backoff).
	Held        int64   `json:"held"`
	HeldSeconds float64 `json:"held_seconds"`
	Refused     int64   `json:"refused"`
	// SentDuringPause counts the requests that left robotsgate for the
	// origin during one of its pauses: 0 when every pause was kept.
	// FirstDuringPause is the URL of the first found.
	SentDuringPause  int64  `json:"sent_during_pause"`
	FirstDuringPause string `json:"first_during_pause,omitempty"`
	// Unchecked counts pauses logged too far out of order (after more
	// than 128 later requests of the origin) to check every request
	// against them.
	Unchecked int64 `json:"unchecked"`
}

// figures states an origin's pause figures.
func (p *pauseAgg) figures() BackoffFigures {
	f := BackoffFigures{
		Answers: p.answers, Statuses: p.statuses, PausedSeconds: seconds(p.total), LongestPauseSeconds: seconds(p.longest),
		Held: p.held, HeldSeconds: p.heldMS / 1000, Refused: p.refused, SentDuringPause: p.during, Unchecked: p.unchecked,
	}
	if p.firstBad != nil {
		f.FirstDuringPause = p.firstBad.URL
	}
	return f
}
