package report

import (
	"math"
	"sort"
	"time"
)

// The compliance figure of pacing: the gaps between successive forwarded
// requests of one pacing key, each request taken when it left the proxy
// (its arrival, the audit record's time, plus the time it was held,
// wait_ms). A gap is measured against the interval robots.txt asked of
// the later request (Crawl-delay or Request-rate of its group in the
// version that judged it); no gap may be below it.
//
// The audit log is written when responses end, not when requests leave:
// a long download is logged after requests that left later. Each key
// keeps a window of its last sends, sorted, so that a record that comes
// out of order still falls between its true neighbours; a send older
// than everything the window has dropped cannot be placed and is counted
// as late. Memory per key is bounded by the window, whatever the log's
// length; the gaps themselves are only counted (a fixed-bucket histogram
// of gap ÷ asked interval, the smallest gap, the number below the asked
// interval), never kept.

// reorderWindow is how many sends a key keeps to place records that come
// out of order: a request may be logged after up to this many later
// requests of its key.
const reorderWindow = 128

// ratioEdges are the lower bounds of the histogram's buckets of gap ÷
// asked interval; the last bucket has no upper bound. The buckets below
// 1 are gaps shorter than robots.txt asked.
var ratioEdges = []float64{0, 0.5, 0.9, 0.99, 1, 1.01, 1.02, 1.05, 1.1, 1.25, 1.5, 2, 3, 5, 10, 100}

// bucketOf returns the bucket of ratio.
func bucketOf(ratio float64) int {
	i := sort.Search(len(ratioEdges), func(i int) bool { return ratioEdges[i] > ratio }) - 1
	return max(i, 0) // a ratio below the first edge (negative: never from a real log) counts in the first bucket
}

// send is one forwarded request of a key: when it left the proxy and the
// interval asked of it (0: none), in nanoseconds.
type send struct {
	at, asked int64
}

// gapStats counts the gaps of a key, or of several keys merged.
type gapStats struct {
	gaps     int64 // gaps whose later request had an interval asked
	below    int64 // of them, shorter than that interval
	buckets  [16]int64
	hasMin   bool
	minGap   int64 // the smallest gap counted, and the interval asked of it
	minAsked int64
	minRatio float64 // the smallest gap ÷ asked interval (not necessarily of minGap)
}

func init() {
	if len(ratioEdges) != len(gapStats{}.buckets) {
		panic("report: ratioEdges and gapStats.buckets disagree")
	}
}

// add counts a gap whose later request was asked to wait asked (no
// constraint, and not counted, when asked is 0).
func (g *gapStats) add(gap, asked int64) {
	if asked <= 0 {
		return
	}
	ratio := float64(gap) / float64(asked)
	g.gaps++
	g.buckets[bucketOf(ratio)]++
	if gap < asked {
		g.below++
	}
	if !g.hasMin || gap < g.minGap || gap == g.minGap && asked > g.minAsked {
		g.minGap, g.minAsked = gap, asked
	}
	if !g.hasMin || ratio < g.minRatio {
		g.minRatio = ratio
	}
	g.hasMin = true
}

// remove uncounts a gap counted by add, when a send placed later falls
// inside it (it becomes two shorter gaps). The smallest gap and ratio
// need no undoing: the two gaps that replace it are shorter, and the
// later one keeps its asked interval, so they only go down.
func (g *gapStats) remove(gap, asked int64) {
	if asked <= 0 {
		return
	}
	g.gaps--
	g.buckets[bucketOf(float64(gap)/float64(asked))]--
	if gap < asked {
		g.below--
	}
}

// merge adds o's counts to g.
func (g *gapStats) merge(o *gapStats) {
	g.gaps += o.gaps
	g.below += o.below
	for i := range g.buckets {
		g.buckets[i] += o.buckets[i]
	}
	if !o.hasMin {
		return
	}
	if !g.hasMin || o.minGap < g.minGap || o.minGap == g.minGap && o.minAsked > g.minAsked {
		g.minGap, g.minAsked = o.minGap, o.minAsked
	}
	if !g.hasMin || o.minRatio < g.minRatio {
		g.minRatio = o.minRatio
	}
	g.hasMin = true
}

// gapWindow is a key's last sends, sorted by time, and the latest send it
// has dropped.
type gapWindow struct {
	sends      []send
	dropped    int64
	hasDropped bool
}

// add places s among the key's sends and counts the gaps it makes in
// stats. It returns false, counting nothing, when s is older than a send
// the window has dropped (its neighbours are unknown).
func (w *gapWindow) add(s send, stats *gapStats) bool {
	i := sort.Search(len(w.sends), func(i int) bool { return w.sends[i].at > s.at })
	var prev *send
	switch {
	case i > 0:
		prev = &w.sends[i-1]
	case w.hasDropped && s.at < w.dropped:
		return false
	case w.hasDropped:
		prev = &send{at: w.dropped}
	}
	var next *send
	if i < len(w.sends) {
		next = &w.sends[i]
	}
	if prev != nil && next != nil {
		stats.remove(next.at-prev.at, next.asked)
	}
	if prev != nil {
		stats.add(s.at-prev.at, s.asked)
	}
	if next != nil {
		stats.add(next.at-s.at, next.asked)
	}
	w.sends = append(w.sends, send{})
	copy(w.sends[i+1:], w.sends[i:])
	w.sends[i] = s
	if len(w.sends) > reorderWindow {
		w.dropped, w.hasDropped = w.sends[0].at, true
		w.sends = append(w.sends[:0], w.sends[1:]...)
	}
	return true
}

// seconds converts nanoseconds to seconds.
func seconds(ns int64) float64 { return time.Duration(ns).Seconds() }

// histogram states stats' buckets.
func (g *gapStats) histogram() Histogram {
	h := Histogram{Buckets: make([]Bucket, len(ratioEdges))}
	for i, from := range ratioEdges {
		b := Bucket{From: from, Count: g.buckets[i]}
		if i+1 < len(ratioEdges) {
			to := ratioEdges[i+1]
			b.To = &to
		}
		h.Buckets[i] = b
	}
	return h
}

// roundRatio keeps 4 decimals of a ratio for the JSON (1.0102).
func roundRatio(r float64) float64 { return math.Round(r*1e4) / 1e4 }
