package proxy

import (
	"sync/atomic"

	"github.com/robotsgate/robotsgate/admin"
)

// sparkMinutes is how many minutes the status page's sparklines show.
const sparkMinutes = admin.SparkMinutes

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
