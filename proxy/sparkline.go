package proxy

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// sparkMinutes is how many minutes the status page's sparklines show.
const sparkMinutes = 15

// minuteRing counts events in the last sparkMinutes minutes without a
// lock: one word per minute, indexed by the minute modulo sparkMinutes,
// that holds the minute it counts (high bits) and the count (low bits).
// A word left from an earlier round is restarted with one compare-and-
// swap; a word of the current minute is incremented. Memory is fixed:
// sparkMinutes words per ring.
type minuteRing [sparkMinutes]atomic.Uint64

const (
	ringCountBits  = 36 // up to 2^36-1 events a minute
	ringCountMask  = 1<<ringCountBits - 1
	ringMinuteMask = 1<<(64-ringCountBits) - 1 // Unix minutes modulo 2^28 (about 510 years)
)

// add counts one event in minute (Unix minutes).
func (r *minuteRing) add(minute int64) {
	w := &r[uint64(minute)%sparkMinutes]
	m := uint64(minute) & ringMinuteMask
	for {
		old := w.Load()
		if old>>ringCountBits == m {
			if old&ringCountMask != ringCountMask {
				w.Add(1)
			}
			return
		}
		if w.CompareAndSwap(old, m<<ringCountBits|1) {
			return
		}
	}
}

// series returns the counts of the sparkMinutes minutes that end with
// minute now, the oldest first.
func (r *minuteRing) series(now int64) [sparkMinutes]int64 {
	var out [sparkMinutes]int64
	for i := range out {
		minute := now - sparkMinutes + 1 + int64(i)
		w := r[uint64(minute)%sparkMinutes].Load()
		if w>>ringCountBits == uint64(minute)&ringMinuteMask {
			out[i] = int64(w & ringCountMask)
		}
	}
	return out
}

// sparkline is an origin's requests and refusals per minute, drawn as two
// polylines of an inline SVG on one scale.
type sparkline struct {
	Requests, Refusals [sparkMinutes]int64
	Peak               int64 // the most requests in one minute
}

// The sparkline's drawing area, in pixels.
const (
	sparkWidth  = 150
	sparkHeight = 30
)

func newSparkline(requests, refusals [sparkMinutes]int64) *sparkline {
	s := &sparkline{Requests: requests, Refusals: refusals}
	for i := range requests {
		s.Peak = max(s.Peak, requests[i], refusals[i])
	}
	return s
}

// Width and Height are the SVG's size, for the template.
func (*sparkline) Width() int  { return sparkWidth }
func (*sparkline) Height() int { return sparkHeight }

// RequestPoints and RefusalPoints are the polylines' points attributes.
func (s *sparkline) RequestPoints() string { return s.points(&s.Requests) }
func (s *sparkline) RefusalPoints() string { return s.points(&s.Refusals) }

// points maps the series to x from 1 to width-1 (one point per minute)
// and y from height-1 (none) to 1 (the peak).
func (s *sparkline) points(series *[sparkMinutes]int64) string {
	var b strings.Builder
	peak := max(s.Peak, 1)
	for i, n := range series {
		x := 1 + float64(i)*float64(sparkWidth-2)/(sparkMinutes-1)
		y := float64(sparkHeight-1) - float64(n)*float64(sparkHeight-2)/float64(peak)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
	}
	return b.String()
}

// Title describes the sparkline in words (the SVG's title: a tooltip, and
// what a screen reader says).
func (s *sparkline) Title() string {
	return fmt.Sprintf("requests per minute, last %d minutes, oldest first: %s; refused: %s",
		sparkMinutes, joinCounts(&s.Requests), joinCounts(&s.Refusals))
}

func joinCounts(series *[sparkMinutes]int64) string {
	parts := make([]string, len(series))
	for i, n := range series {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, " ")
}
