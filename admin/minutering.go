package admin

import "sync/atomic"

// minuteRing counts events in the last SparkMinutes minutes without a
// lock: one word per minute, indexed by the minute modulo SparkMinutes,
// that holds the minute it counts (high bits) and the count (low bits).
// A word left from an earlier round is restarted with one compare-and-
// swap; a word of the current minute is incremented. Memory is fixed:
// SparkMinutes words per ring.
type minuteRing [SparkMinutes]atomic.Uint64

const (
	ringCountBits  = 36 // up to 2^36-1 events a minute
	ringCountMask  = 1<<ringCountBits - 1
	ringMinuteMask = 1<<(64-ringCountBits) - 1 // Unix minutes modulo 2^28 (about 510 years)
)

// add counts one event in minute (Unix minutes).
func (r *minuteRing) add(minute int64) {
	w := &r[uint64(minute)%SparkMinutes]
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

// series returns the counts of the SparkMinutes minutes that end with
// minute now, the oldest first.
func (r *minuteRing) series(now int64) [SparkMinutes]int64 {
	var out [SparkMinutes]int64
	for i := range out {
		minute := now - SparkMinutes + 1 + int64(i)
		w := r[uint64(minute)%SparkMinutes].Load()
		if w>>ringCountBits == uint64(minute)&ringMinuteMask {
			out[i] = int64(w & ringCountMask)
		}
	}
	return out
}
